// Softmax over the last dim of contiguous [rows, cols] data, float32 statistics for every
// dtype. One block per row (grid-striding), so any row length works.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// y = exp(x - max) / sum(exp(x - max)) per row; x and y of `dtype` (float32/bfloat16/float16).
void softmax_forward(const void* x, void* y, DType dtype, std::int64_t rows, std::int64_t cols, cudaStream_t stream);

// dx = y * (dy - sum(dy * y)) per row, from the forward's output y.
void softmax_backward(const void* grad_y, const void* y, void* grad_x, DType dtype, std::int64_t rows,
                      std::int64_t cols, cudaStream_t stream);

}  // namespace zt::cuda
