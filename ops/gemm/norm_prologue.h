// A decoder's residual add and RMSNorm handed to the product that reads its output, to run as
// that product's prologue (ops::few_rows_qkv_rope, ops::few_rows_norm_swiglu: cuda::FewRowsNorm):
// the product reads rmsnorm(x + residual) · weight, rounded as ops::residual_rmsnorm_forward
// rounds it, and its launch also writes the sum (the stream's next residual). A decode step's
// two norms a layer are then no launches of their own.
#pragma once

#include "ops/norm/rmsnorm.h"
#include "tensor/tensor.h"

namespace zt::ops {

struct NormPrologue {
  Tensor residual;  // [rows, K] in x's layout
  Tensor weight;    // [K]: the norm's
  Tensor sum;       // [rows, K] contiguous, allocated by the caller; written only where the product runs
  float eps = 0.0f;
  RmsNormStyle style = RmsNormStyle::kQwen;
};

}  // namespace zt::ops
