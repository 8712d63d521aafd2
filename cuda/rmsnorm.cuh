// RMSNorm over the last dim of contiguous [rows, hidden] tensors, fp32 statistics.
// Forward: rstd = rsqrt(mean(x²) + eps) per row; y = w * (x * rstd), where Qwen's style
// rounds x * rstd to the dtype before the weight multiply (round_normalized) and GLM's does
// not. Backward: dx per row, and dweight summed over rows deterministically — per-chunk
// partial sums in a fixed chunking of the rows, then one ordered pass over the chunks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// x, weight, y of `dtype`; rstd float32 [rows].
void rmsnorm_forward(const void* x, const void* weight, void* y, float* rstd, DType dtype, std::int64_t rows,
                     std::int64_t hidden, float eps, bool round_normalized, cudaStream_t stream);

// grad_x [rows, hidden] and grad_weight [hidden] of `dtype`; every element is written (a
// zero dweight when rows is 0).
void rmsnorm_backward(const void* grad_y, const void* x, const void* weight, const float* rstd, void* grad_x,
                      void* grad_weight, DType dtype, std::int64_t rows, std::int64_t hidden, bool round_normalized,
                      cudaStream_t stream);

}  // namespace zt::cuda
