#include "models/token_loss.h"

#include "autograd/functions.h"

namespace zt::models {

autograd::Variable summed_token_loss(const CausalLM& model, const PackedBatch& batch, double grad_scale) {
  autograd::Variable hidden = model.forward_hidden(batch.input_ids, batch.positions, batch.cu_seqlens);
  // ZeRO-3: the head is whole only for the fused head + loss, which forms its gradients here.
  GatheredModule head(model.parameter_gatherer(), model.lm_head_module());
  return autograd::linear_cross_entropy(
      hidden, model.lm_head_weight(), batch.labels,
      {.reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex, .grad_scale = grad_scale});
}

}  // namespace zt::models
