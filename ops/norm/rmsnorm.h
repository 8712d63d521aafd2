// RMSNorm over the last dim with fp32 statistics, in the two rounding styles of the HF
// models, which differ only for 16-bit inputs (h = float(x), r = rsqrt(mean(h²) + eps)):
//   kQwen (Qwen2RMSNorm):  out = dtype(float(w) * float(dtype(h * r)))
//   kGlm  (ChatGLM RMSNorm): out = dtype(float(w) * (h * r))
// (Qwen rounds the normalized row to the input dtype before the weight multiply; GLM keeps
// it in float32 because x * rsqrt(...) promotes to float32 there.)
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

enum class RmsNormStyle { kQwen, kGlm };

struct RmsNormOutput {
  Tensor y;     // x's shape and dtype
  Tensor rstd;  // x's leading dims: 1 / sqrt(mean(x²) + eps) per row; float32 (float64 for float64 x)
};

// x [..., hidden], weight [hidden] of x's dtype.
RmsNormOutput rmsnorm_forward(const Tensor& x, const Tensor& weight, float eps, RmsNormStyle style);

struct RmsNormGrads {
  Tensor grad_x;       // x's shape
  Tensor grad_weight;  // [hidden], summed over rows in float32 in a fixed order (no atomics)
};

// saved_rstd is the forward's rstd.
RmsNormGrads rmsnorm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight, const Tensor& saved_rstd,
                              RmsNormStyle style);

// The pre-norm block's residual add fused in front of the norm, in one pass over memory:
// sum = dtype(x + residual) (the next residual), y = rmsnorm(sum), bit for bit what the
// unfused add followed by rmsnorm_forward gives.
struct RmsNormResidualOutput {
  Tensor y;     // x's shape and dtype
  Tensor sum;   // x + residual, x's shape and dtype
  Tensor rstd;  // as RmsNormOutput::rstd, of the sum
};

// x and residual [..., hidden] of one shape and dtype, weight [hidden].
RmsNormResidualOutput rmsnorm_residual_forward(const Tensor& x, const Tensor& residual, const Tensor& weight, float eps,
                                               RmsNormStyle style);

struct RmsNormResidualGrads {
  Tensor grad_input;   // the gradient of x and of residual alike (sum's shape)
  Tensor grad_weight;  // as RmsNormGrads::grad_weight
};

// sum and saved_rstd are the forward's. grad_sum, the gradient the sum received from the
// rest of the network, may be undefined (none); when defined, grad_input =
// dtype(dtype(dx) + grad_sum), the rounding of the unfused ops' autograd accumulation.
RmsNormResidualGrads rmsnorm_residual_backward(const Tensor& grad_y, const Tensor& grad_sum, const Tensor& sum,
                                               const Tensor& weight, const Tensor& saved_rstd, RmsNormStyle style);

}  // namespace zt::ops
