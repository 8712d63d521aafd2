// RMSNorm over the last dim of contiguous [rows, hidden] tensors, fp32 statistics, with an
// optional fused residual add in front (sum = x + residual, rounded to the dtype, is what
// gets normalised, and is written out for the next residual).
// Forward: rstd = 1 / sqrt(mean(h²) + eps) per row; y = w * (h * rstd), where Qwen's style
// rounds h * rstd to the dtype before the weight multiply (round_normalized) and GLM's does
// not. Backward: dx per row, plus grad_sum when the sum had a gradient of its own; dweight
// summed over rows deterministically — per-block partial sums over a fixed chunking of the
// rows, then one ordered pass over the blocks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// All of `dtype` except rstd (float32 [rows]). residual and sum are both null (plain
// RMSNorm) or both set (fused residual add).
struct RmsNormForwardArgs {
  const void* x = nullptr;
  const void* residual = nullptr;
  const void* weight = nullptr;
  void* y = nullptr;
  void* sum = nullptr;
  float* rstd = nullptr;
};

// x is what the forward normalised (the sum, for the fused op). grad_sum may be null; when
// set, grad_x = dtype(dtype(dx) + grad_sum), the rounding of an unfused autograd add.
// grad_x [rows, hidden] and grad_weight [hidden] are written everywhere (a zero dweight when
// rows is 0).
struct RmsNormBackwardArgs {
  const void* grad_y = nullptr;
  const void* grad_sum = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  const float* rstd = nullptr;
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
};

void rmsnorm_forward(const RmsNormForwardArgs& args, DType dtype, std::int64_t rows, std::int64_t hidden, float eps,
                     bool round_normalized, cudaStream_t stream);

void rmsnorm_backward(const RmsNormBackwardArgs& args, DType dtype, std::int64_t rows, std::int64_t hidden,
                      bool round_normalized, cudaStream_t stream);

}  // namespace zt::cuda
