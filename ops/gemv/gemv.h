// A decode step's linear layer as one op: for a few rows (1 to 32 tokens),
//   out = epilogue(prologue(x) · weightᵀ),  weight [out, in] as torch's Linear,
// with the kernels a decode layer launches around each GEMM folded in:
//   prologue kNone:    x as it is.
//   prologue kRmsNorm: x is the residual stream, normalised first exactly as
//                      rmsnorm_forward(x, norm_weight, eps, norm_style).y.
//   prologue kSwiglu:  the input is swiglu_forward(x, up) (x is gate), or with `up` undefined
//                      swiglu_fused_forward(x) (x is [..., 2 * in] = [gate | up]).
//   epilogue:          + bias (added before the product is rounded, as linear_forward does),
//                      then residual + that, rounded once more: torch's `residual + linear(...)`.
// The CPU runs exactly that composition of the existing ops (the reference); the GPU runs
// cuda/gemv/ in one launch, which reads every weight once and keeps the inputs on chip.
#pragma once

#include <cstdint>

#include "ops/norm/rmsnorm.h"
#include "tensor/tensor.h"

namespace zt::ops {

// The most rows (the product of x's leading dims) the op takes, on either device.
inline constexpr std::int64_t kSmallMMaxRows = 32;

enum class SmallMPrologue { kNone, kRmsNorm, kSwiglu };

struct SmallMLinearOptions {
  SmallMPrologue prologue = SmallMPrologue::kNone;
  // kRmsNorm only: [in] of x's dtype.
  Tensor norm_weight;
  float eps = 1e-6f;
  RmsNormStyle norm_style = RmsNormStyle::kQwen;
  // kSwiglu only: the up projection's output, x's shape; undefined for the fused layout.
  Tensor up;
  Tensor bias;      // [out], or undefined
  Tensor residual;  // the output's shape, or undefined
};

// x [..., in] ([..., 2 * in] for the fused SwiGLU), weight [out, in] -> [..., out], all of one
// float dtype on one device (float32, bfloat16 or float16 on the GPU). Throws zt::Error for
// anything else, or for more than kSmallMMaxRows rows (a GEMM's work: linear_forward).
Tensor small_m_linear(const Tensor& x, const Tensor& weight, const SmallMLinearOptions& options = {});

}  // namespace zt::ops
