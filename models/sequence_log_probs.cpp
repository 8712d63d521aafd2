#include "models/sequence_log_probs.h"

#include <string>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/op_region.h"
#include "ops/elementwise/elementwise.h"
#include "ops/gemm/matmul.h"
#include "runtime/error.h"

namespace zt::models {

SequenceScorer::SequenceScorer(const CausalLM& model, const PackedBatch& batch, bool logit_sums) : model_(model) {
  ZT_REQUIRE(batch.labels.defined(), "sequence log-probabilities: the batch has no labels");
  const std::vector<double> bounds = batch.cu_seqlens.to_vector();
  const std::vector<double> labels = batch.labels.to_vector();
  const std::size_t sequences = bounds.size() - 1;
  sequence_of_token_.assign(labels.size(), -1);
  log_probs_ = {std::vector<double>(sequences, 0.0), std::vector<std::int64_t>(sequences, 0),
                std::vector<double>(logit_sums ? sequences : 0, 0.0)};
  for (std::size_t s = 0; s < sequences; ++s)
    for (auto t = static_cast<std::size_t>(bounds[s]); t < static_cast<std::size_t>(bounds[s + 1]); ++t)
      if (static_cast<std::int64_t>(labels[t]) != kIgnoreIndex) {
        sequence_of_token_[t] = static_cast<std::int64_t>(s);
        ++log_probs_.label_tokens[s];
      }
  hidden_ = model.forward_hidden(batch);
  labels_ = batch.labels.to(model.device());
  const bool frozen_head =
      autograd::grad_enabled() && hidden_.requires_grad() && !model.lm_head_weight().requires_grad();
  autograd::NoGradGuard no_grad;
  const autograd::OpRegion region("linear_cross_entropy");  // the head's pass, not a recorded op's
  GatheredModule head(model.parameter_gatherer(), model.lm_head_module());
  ops::LinearCrossEntropyOutput losses = ops::linear_cross_entropy_forward(
      hidden_.data(), model.lm_head_weight().data(), labels_,
      {.reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex, .token_losses = true},
      {.hidden = frozen_head, .weight = false});
  // The sum of a token's logits over the vocabulary is its hidden state times the sum of the
  // head's rows: one product of [tokens, hidden] by [hidden] instead of the logits.
  std::vector<double> token_logit_sums;
  if (logit_sums) {
    // The head's rows summed as one product (ones · weight): a GEMV that reads the weight once
    // at full bandwidth, where a reduction over its leading dim runs a thread per column.
    const Tensor& weight = model.lm_head_weight().data();
    const Tensor ones = Tensor::full({1, weight.size(0)}, 1.0, weight.dtype(), weight.device());
    const Tensor row_sum = ops::matmul_forward(ones, weight);                                  // [1, hidden]
    token_logit_sums = ops::matmul_forward(hidden_.data(), row_sum, false, true).to_vector();  // [tokens, 1]
  }
  std::vector<double> token_losses = losses.token_loss.to_vector();
  for (std::size_t t = 0; t < labels.size(); ++t) {
    const std::int64_t s = sequence_of_token_[t];
    if (s < 0) continue;
    log_probs_.sums[static_cast<std::size_t>(s)] -= token_losses[t];
    if (logit_sums) log_probs_.logit_sums[static_cast<std::size_t>(s)] += token_logit_sums[t];
  }
  if (frozen_head) {
    unit_pass_ = std::move(losses);
    token_losses_ = std::move(token_losses);
  }
}

// The frozen head's rows of d(token loss)/d(hidden), each times its token's weight and
// grad_scale (in the loss's precision, then rounded once to hidden's dtype), recorded as the
// fused head's node whose value is the weighted sum of the token losses.
autograd::Variable SequenceScorer::scaled_unit_pass(const std::vector<double>& weights, DType dtype,
                                                    double grad_scale) const {
  double value = 0.0;
  std::vector<double> row_factors(weights.size());
  for (std::size_t t = 0; t < weights.size(); ++t) {
    value += weights[t] * token_losses_[t];
    row_factors[t] = weights[t] * grad_scale;
  }
  const Tensor& unit = unit_pass_.grad_hidden;
  ops::LinearCrossEntropyOutput pass;
  {
    const autograd::OpRegion region("linear_cross_entropy");
    const Tensor factors =
        Tensor::from_values(row_factors, {static_cast<std::int64_t>(row_factors.size())}, dtype).to(model_.device());
    // Rows times a per-row factor: the factors run along the trailing dim of the transpose.
    const Tensor rows = ops::mul_forward(ops::cast_forward(unit, dtype).transpose(0, 1).contiguous(), factors);
    pass.loss = Tensor::from_values({value}, {}, unit_pass_.loss.dtype()).to(model_.device());
    pass.valid_count = unit_pass_.valid_count;
    pass.grad_hidden = ops::cast_forward(rows.transpose(0, 1).contiguous(), unit.dtype());
  }
  return autograd::linear_cross_entropy_recorded(
      hidden_, model_.lm_head_weight(), std::move(pass),
      {.reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex, .grad_scale = grad_scale});
}

autograd::Variable SequenceScorer::weighted(const std::vector<double>& coefficients, double grad_scale) const {
  ZT_REQUIRE(coefficients.size() == log_probs_.sums.size(),
             "sequence log-probabilities: " + std::to_string(coefficients.size()) + " coefficients for " +
                 std::to_string(log_probs_.sums.size()) + " sequences");
  // log p = -(token loss), so each token's weight is minus its sequence's coefficient.
  std::vector<double> weights(sequence_of_token_.size(), 0.0);
  for (std::size_t t = 0; t < weights.size(); ++t)
    if (sequence_of_token_[t] >= 0) weights[t] = -coefficients[static_cast<std::size_t>(sequence_of_token_[t])];
  const DType dtype = model_.dtype() == DType::kF64 ? DType::kF64 : DType::kF32;  // the loss's
  if (unit_pass_.grad_hidden.defined()) return scaled_unit_pass(weights, dtype, grad_scale);
  const Tensor token_weights =
      Tensor::from_values(weights, {static_cast<std::int64_t>(weights.size())}, dtype).to(model_.device());
  GatheredModule head(model_.parameter_gatherer(), model_.lm_head_module());
  return autograd::linear_cross_entropy(hidden_, model_.lm_head_weight(), labels_,
                                        {.reduction = ops::Reduction::kSum,
                                         .ignore_index = kIgnoreIndex,
                                         .grad_scale = grad_scale,
                                         .token_weights = token_weights});
}

}  // namespace zt::models
