// Linear layer in the HF/torch layout: y = x · Wᵀ + b with weight [out, in], through cuBLASLt
// on the GPU (the bias fused as its epilogue) and a loop on the CPU.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

// x [..., in], weight [out, in], bias [out] or undefined -> [..., out].
Tensor linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

struct LinearGrads {
  Tensor grad_x;       // x's shape: grad_y · W
  Tensor grad_weight;  // [out, in]: grad_yᵀ · x, summed over every leading dim of x
  Tensor grad_bias;    // [out]: grad_y summed over rows with fp32 accumulation; undefined without bias
};

LinearGrads linear_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight, bool with_bias);

}  // namespace zt::ops
