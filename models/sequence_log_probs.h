// Per-sequence log-probabilities of a packed batch's labels, for preference training
// (train/preference/): log p(answer | prompt) of each cu_seqlens segment is the sum over its
// label tokens of log softmax(logits)[label], the negated cross-entropy of those tokens. The
// head runs through the fused LM head + cross-entropy (ops/loss/linear_cross_entropy.h), so
// the [tokens, vocab] logits are never held:
//   1. the scorer runs the body (recorded when grad mode is on) and the head's per-token
//      losses without gradients, giving each sequence's log-probability;
//   2. the preference loss, a function of those numbers, says d(loss)/d(log p) of each;
//   3. weighted() runs the head once more with those factors as per-token weights, forming
//      the head's gradients of sum_i factor_i · log p_i in the one pass, as SFT's loss does.
// The head runs twice instead of keeping the logits; under ZeRO-3 it is gathered for each.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/variable.h"
#include "models/batch.h"
#include "models/model.h"

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
  const CausalLM& model_;
  Tensor labels_;
  std::vector<std::int64_t> sequence_of_token_;  // -1 where the label is ignored
  autograd::Variable hidden_;
  SequenceLogProbs log_probs_;
};

}  // namespace zt::models
