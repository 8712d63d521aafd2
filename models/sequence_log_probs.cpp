#include "models/sequence_log_probs.h"

#include <string>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
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
  hidden_ = model.forward_hidden(batch.input_ids, batch.positions, batch.cu_seqlens);
  labels_ = batch.labels.to(model.device());
  autograd::NoGradGuard no_grad;
  GatheredModule head(model.parameter_gatherer(), model.lm_head_module());
  const ops::LinearCrossEntropyOutput losses = ops::linear_cross_entropy_forward(
      hidden_.data(), model.lm_head_weight().data(), labels_,
      {.reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex, .token_losses = true});
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
  const std::vector<double> token_losses = losses.token_loss.to_vector();
  for (std::size_t t = 0; t < labels.size(); ++t) {
    const std::int64_t s = sequence_of_token_[t];
    if (s < 0) continue;
    log_probs_.sums[static_cast<std::size_t>(s)] -= token_losses[t];
    if (logit_sums) log_probs_.logit_sums[static_cast<std::size_t>(s)] += token_logit_sums[t];
  }
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
