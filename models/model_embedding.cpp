#include "models/model_embedding.h"

#include <vector>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "ops/embedding/embedding.h"

namespace zt::models {
namespace {

// Positions of the tokens that are the padding id (read on the host: ids are few).
std::vector<std::int64_t> padding_positions(const Tensor& ids, std::int64_t padding_idx) {
  std::vector<std::int64_t> positions;
  std::vector<double> values = ids.to_vector();
  for (std::size_t i = 0; i < values.size(); ++i)
    if (static_cast<std::int64_t>(values[i]) == padding_idx) positions.push_back(static_cast<std::int64_t>(i));
  return positions;
}

}  // namespace

autograd::Variable token_embedding(const autograd::Variable& weight, const Tensor& ids,
                                   std::optional<std::int64_t> padding_idx, bool deterministic) {
  using namespace autograd;
  if (!padding_idx || !grad_enabled() || !weight.requires_grad()) return embedding(weight, ids, deterministic);
  std::vector<std::int64_t> pads = padding_positions(ids, *padding_idx);
  if (pads.empty()) return embedding(weight, ids, deterministic);
  const std::int64_t vocab = weight.data().size(0);
  const GradSinkRef sink = GradSinkRef::on_the_gpu(weight);  // as autograd::embedding's
  return record_one("embedding", ops::embedding_forward(weight.data(), ids), {weight},
                    [ids, pads, vocab, deterministic, sink](const TensorList& g, const NeedsList&) {
                      Tensor grad = g[0].clone();
                      for (std::int64_t position : pads) grad.select(0, position).zero_();
                      return TensorList{ops::embedding_backward(grad, ids, vocab, deterministic, sink.buffer())};
                    });
}

}  // namespace zt::models
