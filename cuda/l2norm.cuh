// The L2 norm of many tensors together, deterministic: each tensor's sum of squares is
// split into a number of float32 block partials that depends only on its size, and one
// block adds every partial in order, in float64, before the square root.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// How many partials sum_squares_partials writes for a tensor of n elements (>= 1).
std::int64_t sum_squares_partial_count(std::int64_t n);

// partials[0 .. sum_squares_partial_count(n)) = float32 sums of x[i]² over shares of x.
void sum_squares_partials(const void* x, DType dtype, std::int64_t n, float* partials, cudaStream_t stream);

// out[0] = sqrt(sum of partials[0 .. count)), summed in float64, stored as float32.
void sqrt_of_partial_sum(const float* partials, std::int64_t count, float* out, cudaStream_t stream);

}  // namespace zt::cuda
