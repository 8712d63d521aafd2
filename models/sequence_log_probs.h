// Per-sequence log-probabilities of a packed batch's labels, for preference training
// (train/preference/): log p(answer | prompt) of each cu_seqlens segment is the sum over its
// label tokens of log softmax(logits)[label], the negated cross-entropy of those tokens. The
// head runs through the fused LM head + cross-entropy (ops/loss/linear_cross_entropy.h), so
// the [tokens, vocab] logits are never held:
//   1. the scorer runs the body (recorded when grad mode is on) and the head's per-token
//      losses without gradients, giving each sequence's log-probability;
//   2. the preference loss, a function of those numbers, says d(loss)/d(log p) of each;
//   3. weighted() forms the head's gradients of sum_i factor_i · log p_i. A trainable head
//      runs once more with those factors as per-token weights (its weight gradient needs
//      them inside the pass over the vocabulary). A frozen head (LoRA) needs only the hidden
//      states' gradient, which is linear in each token's factor: step 1's pass forms each
//      token's gradient of its own loss beside the loss, and weighted() scales those rows, so
//      the head runs once.
// Under ZeRO-3 the head is gathered for each pass.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/variable.h"
#include "models/batch.h"
#include "models/model.h"
#include "ops/loss/linear_cross_entropy.h"

namespace zt::models {

struct SequenceLogProbs {
  std::vector<double> sums;                // per sequence: sum of its label tokens' log-probabilities
  std::vector<std::int64_t> label_tokens;  // per sequence: its tokens whose label is not kIgnoreIndex
  std::vector<double> logit_sums;          // per sequence: the logits summed over its label tokens and the vocabulary
                                           // (empty when not asked for)
};

class SequenceScorer {
 public:
  // batch.labels must be defined. Under NoGradGuard nothing is kept for backward. The logits'
  // sums (a metric) cost a pass over the head's rows: a reference scoring skips them.
  SequenceScorer(const CausalLM& model, const PackedBatch& batch, bool logit_sums = true);

  const SequenceLogProbs& log_probs() const { return log_probs_; }

  // A [] Variable equal to sum_i coefficients[i] · log_probs().sums[i] (one coefficient per
  // sequence), whose backward gives that sum's gradients through the head and the recorded
  // body. The head's gradients are formed here, multiplied by grad_scale (a loss scaler's
  // factor; ops/loss/linear_cross_entropy.h).
  autograd::Variable weighted(const std::vector<double>& coefficients, double grad_scale = 1.0) const;

 private:
  autograd::Variable scaled_unit_pass(const std::vector<double>& weights, DType dtype, double grad_scale) const;

  const CausalLM& model_;
  Tensor labels_;
  std::vector<std::int64_t> sequence_of_token_;  // -1 where the label is ignored
  autograd::Variable hidden_;
  SequenceLogProbs log_probs_;
  // A frozen head's pass (step 3 above): its grad_hidden holds each token's gradient of its own
  // loss, and token_losses_ the losses weighted() sums into its value. Undefined otherwise.
  ops::LinearCrossEntropyOutput unit_pass_;
  std::vector<double> token_losses_;
};

}  // namespace zt::models
