// tanh and its backward, elementwise: computed in float32 (float64 for float64) and rounded
// once to the dtype, as torch's kernels do. P-Tuning v2's prefix projection uses it.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

Tensor tanh_forward(const Tensor& x);
// grad_out · (1 − out²), from the forward's output rather than its input, as torch saves it.
Tensor tanh_backward(const Tensor& grad_out, const Tensor& out);

}  // namespace zt::ops
