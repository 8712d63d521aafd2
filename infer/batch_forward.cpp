#include "infer/batch_forward.h"

#include "autograd/grad_mode.h"
#include "ops/embedding/embedding.h"

namespace zt::infer {
namespace {

Tensor int_tensor(const std::vector<double>& values, DType dtype) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

Tensor logits_of(const models::CausalLM& model, PagedKvCache& cache, const std::vector<double>& ids,
                 const std::vector<double>& positions, const std::vector<double>& cu_seqlens) {
  autograd::NoGradGuard no_recording;
  Tensor hidden = model
                      .forward_hidden(int_tensor(ids, DType::kI64), int_tensor(positions, DType::kI64),
                                      int_tensor(cu_seqlens, DType::kI32), &cache)
                      .data();
  if (static_cast<std::size_t>(hidden.size(0)) + 1 != cu_seqlens.size()) {  // keep each sequence's last token
    std::vector<double> last(cu_seqlens.begin() + 1, cu_seqlens.end());
    for (double& end : last) end -= 1;
    hidden = ops::embedding_forward(hidden, int_tensor(last, DType::kI64).to(hidden.device()));
  }
  return model.lm_head(autograd::Variable(hidden)).data();
}

}  // namespace

Tensor step_logits(const models::CausalLM& model, PagedKvCache& cache, const StepInputs& step) {
  std::vector<double> ids, positions, cu_seqlens{0};
  std::vector<SequenceId> sequences = step.decoding;
  std::vector<std::int64_t> lengths(step.decoding.size(), 1);
  for (std::size_t i = 0; i < step.decoding.size(); ++i) {
    ids.push_back(static_cast<double>(step.tokens[i]));
    positions.push_back(static_cast<double>(cache.next_position(step.decoding[i])));
    cu_seqlens.push_back(static_cast<double>(ids.size()));
  }
  for (std::size_t p = 0; p < step.prefilling.size(); ++p) {
    const std::vector<std::int64_t>& prompt = *step.prompts[p];
    for (std::size_t i = 0; i < prompt.size(); ++i) {
      ids.push_back(static_cast<double>(prompt[i]));
      positions.push_back(static_cast<double>(cache.first_position() + static_cast<std::int64_t>(i)));
    }
    cu_seqlens.push_back(static_cast<double>(ids.size()));
    sequences.push_back(step.prefilling[p]);
    lengths.push_back(static_cast<std::int64_t>(prompt.size()));
  }
  cache.set_batch(std::move(sequences), std::move(lengths));
  return logits_of(model, cache, ids, positions, cu_seqlens);
}

}  // namespace zt::infer
