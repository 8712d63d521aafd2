// Softmax over the last dim. Statistics are float32 on the GPU and float64 on the CPU, and
// the output is rounded once to the input dtype, as torch does.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

// x [..., n] -> softmax along the last dim, same shape and dtype.
Tensor softmax_forward(const Tensor& x);

// dx = y * (dy - sum(dy * y)) along the last dim, from the forward's output y: y is all the
// backward needs.
Tensor softmax_backward(const Tensor& grad_y, const Tensor& y);

}  // namespace zt::ops
