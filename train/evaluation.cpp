#include "train/evaluation.h"

#include "autograd/grad_mode.h"
#include "models/token_loss.h"

namespace zt::train {
namespace {

Tensor index_tensor(const std::vector<std::int32_t>& values, DType dtype, Device device) {
  std::vector<double> as_double(values.begin(), values.end());
  return Tensor::from_values(as_double, {static_cast<std::int64_t>(values.size())}, dtype).to(device);
}

// The whole sequences' gathers (models/batch.h): packed rows into them and back, each with
// its backward.
models::SharedPrefixes shared_prefixes(const SharedPrefixRows& rows, Device device) {
  std::vector<std::int32_t> kept_from(rows.expand.size(), -1);  // whole row -> the packed row keeping its output
  for (std::size_t t = 0; t < rows.own_row.size(); ++t)
    kept_from[static_cast<std::size_t>(rows.own_row[t])] = static_cast<std::int32_t>(t);
  auto int32 = [device](const std::vector<std::int32_t>& v) { return index_tensor(v, DType::kI32, device); };
  return {.expand = {int32(rows.expand), int32(rows.own_row), int32(rows.second_use)},
          .compact = {int32(rows.own_row), int32(kept_from), Tensor()},
          .cu_seqlens = int32(rows.cu_seqlens)};
}

}  // namespace

models::PackedBatch device_batch(const PackedBatch& batch, Device device) {
  return {.input_ids = index_tensor(batch.input_ids, DType::kI64, device),
          .positions = index_tensor(batch.positions, DType::kI64, device),
          .cu_seqlens = index_tensor(batch.cu_seqlens, DType::kI32, device),
          .labels = index_tensor(batch.labels, DType::kI64, device),
          .shared = batch.shared.empty() ? models::SharedPrefixes{} : shared_prefixes(batch.shared, device)};
}

EvaluationLoss evaluation_loss(const models::CausalLM& model, const std::vector<TokenizedSample>& samples,
                               std::int64_t batch_size, std::int64_t max_length, const BatchLayout& layout) {
  autograd::NoGradGuard no_grad;
  EvaluationLoss total;
  for (const auto& indices : plan_epoch(samples, batch_size, max_length, /*packing=*/false, 0, 0, /*shuffle=*/false)) {
    const PackedBatch batch = pack(samples, indices, layout);
    if (batch.label_tokens == 0) continue;
    total.loss_sum += models::summed_token_loss(model, device_batch(batch, model.device())).data().to_vector().at(0);
    total.label_tokens += batch.label_tokens;
  }
  return total;
}

}  // namespace zt::train
