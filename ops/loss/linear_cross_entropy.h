// Fused linear + cross-entropy for the language-model head: the loss of
// cross_entropy(hidden · weightᵀ, labels) without ever holding the [tokens, vocab] logits.
// The forward computes the gradients too, when asked (one pass over the vocabulary instead of
// two, as Liger-Kernel's fused linear cross-entropy does); the backward only scales them by
// the upstream gradient. Extra memory on the GPU: one chunk of logits, plus a float32 weight
// gradient while it is kept. See docs/FUSED_LOSS.md.
#pragma once

#include <cstdint>

#include "ops/loss/cross_entropy.h"
#include "tensor/tensor.h"

namespace zt::ops {

struct LinearCrossEntropyOptions {
  Reduction reduction = Reduction::kMean;
  std::int64_t ignore_index = -100;
  // Tokens per chunk on the GPU; 0 picks as many as keep a chunk's logits within 1 GiB.
  std::int64_t chunk_tokens = 0;
  // A chunk's logits in hidden's dtype (the default: the rounding HF's bfloat16/float16
  // lm_head output has before its loss upcasts it, with half the memory and traffic), or in
  // float32 (statistics of the unrounded products). CPU runs ignore it.
  bool float32_logits = false;
  // The gradients computed in the forward are those of loss · grad_scale: a loss scaler's
  // scale, so that float16 gradients of the logits do not underflow. Finite and > 0.
  double grad_scale = 1.0;
  // [tokens] of the loss's dtype on hidden's device, or undefined: the loss is the sum (mean) of
  // weight · token loss and each token's gradient is multiplied by its weight, so that a loss
  // of per-sequence log-probabilities (a preference loss) forms its head gradients in the one
  // pass. A weight may be negative or 0.
  Tensor token_weights{};
  // Also return each token's loss (weighted), to sum per sequence.
  bool token_losses = false;
};

struct LinearCrossEntropyGradsNeeded {
  bool hidden = false;
  bool weight = false;  // false for a frozen lm_head: no weight GEMM, no float32 buffer
};

struct LinearCrossEntropyOutput {
  Tensor loss;         // [] float32 (float64 for float64 hidden)
  Tensor valid_count;  // [] int64: tokens whose label is not ignore_index
  // d(loss · grad_scale)/d(hidden) [tokens, hidden_size] in hidden's dtype, and
  // d(loss · grad_scale)/d(weight) [vocab, hidden_size] accumulated in float32 (float64 for
  // float64); each undefined unless needed.
  Tensor grad_hidden;
  Tensor grad_weight;
  Tensor token_loss{};  // [tokens] of the loss's dtype when options.token_losses, 0 where ignored
};

// hidden [tokens, hidden_size], weight [vocab, hidden_size] (an lm_head, or the tied
// embedding) of one float dtype (float64 on the CPU only), labels [tokens] int32/int64 on the
// same device. A label that is neither ignore_index nor in [0, vocab) throws zt::Error naming
// the token. With every token ignored the loss is 0 and the gradients zero, as for
// cross_entropy_forward.
LinearCrossEntropyOutput linear_cross_entropy_forward(const Tensor& hidden, const Tensor& weight, const Tensor& labels,
                                                      const LinearCrossEntropyOptions& options = {},
                                                      const LinearCrossEntropyGradsNeeded& needed = {});

struct LinearCrossEntropyGrads {
  Tensor grad_hidden;  // hidden's dtype, undefined when the forward did not compute it
  Tensor grad_weight;  // weight_dtype, likewise
};

// The forward's gradients times grad_loss / grad_scale, for a [] grad_loss of the loss's
// dtype on its device (read there, so the GPU never waits for the host). With a weight_sink
// (float32, the weight's shape, contiguous, on its device: a trained weight's gradient
// buffer), the weight's gradient is added into it and grad_weight stays undefined: on the GPU
// in float32, neither rounded to weight_dtype nor added again; on the CPU rounded to
// weight_dtype first, the bits the delivered gradient gives.
LinearCrossEntropyGrads linear_cross_entropy_backward(const Tensor& grad_loss, const LinearCrossEntropyOutput& forward,
                                                      DType weight_dtype, const LinearCrossEntropyOptions& options = {},
                                                      const Tensor& weight_sink = Tensor());

}  // namespace zt::ops
