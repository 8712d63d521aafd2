// Cross-entropy of logits [tokens, vocab] against integer labels, with an ignored label
// value for padding, reduced by mean over the non-ignored tokens or by sum. The logits exist
// here; the fused linear + cross-entropy that never materialises them is a separate op.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace zt::ops {

enum class Reduction { kMean, kSum };

struct CrossEntropyOptions {
  Reduction reduction = Reduction::kMean;
  std::int64_t ignore_index = -100;
};

struct CrossEntropyOutput {
  Tensor loss;         // [] float32 (float64 for float64 logits)
  Tensor logsumexp;    // [tokens], loss's dtype: saved for backward
  Tensor valid_count;  // [] int64: tokens whose label is not ignore_index; saved for backward
};

// logits [tokens, vocab] float32/bfloat16/float16 (float64 on the CPU), labels int32/int64
// [tokens]. A label that is neither ignore_index nor in [0, vocab) throws zt::Error naming
// the token and the label. With every token ignored, the mean is 0 (not torch's NaN) and
// the gradient is zero.
CrossEntropyOutput cross_entropy_forward(const Tensor& logits, const Tensor& labels,
                                         const CrossEntropyOptions& options = {});

// dlogits = (softmax(logits) - onehot(label)) * grad_loss (/ valid_count for the mean), zero
// rows for ignored tokens; logits' shape and dtype. grad_loss is a [] tensor of the loss's
// dtype on logits' device (read there, so the GPU never waits for the host).
Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& labels,
                              const Tensor& saved_logsumexp, const Tensor& valid_count,
                              const CrossEntropyOptions& options = {});

}  // namespace zt::ops
