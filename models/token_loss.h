// The loss of language-model training and evaluation: next-token cross-entropy summed over
// the label tokens of a packed batch, through the fused lm_head + loss (autograd/functions.h),
// so the [tokens, vocab] logits are never held. The labels are already shifted (labels[t] is
// the token expected after token t; models/batch.h) and kIgnoreIndex tokens add nothing.
// Summed over batches (and ranks) and divided by their label tokens, it is the mean the
// trainer logs, its evaluation gives and `zerotune evaluate` reports.
#pragma once

#include "autograd/variable.h"
#include "models/batch.h"
#include "models/model.h"

namespace zt::models {

// A [] float32 (float64 for a float64 model). While recording, its forward also forms the
// gradients of loss · grad_scale, a loss scaler's factor (ops/loss/linear_cross_entropy.h).
// Under ZeRO-3 the head is gathered for the loss alone.
autograd::Variable summed_token_loss(const CausalLM& model, const PackedBatch& batch, double grad_scale = 1.0);

}  // namespace zt::models
