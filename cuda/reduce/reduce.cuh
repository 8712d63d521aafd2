// Sums of contiguous tensors with float32 accumulation, deterministic: the work is split in
// a way that depends only on the sizes, and partial sums combine in a fixed order. The
// result is multiplied by `multiplier` (1 for a sum, 1/count for a mean) in float32 and
// rounded once to the dtype.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// out[0] = multiplier * sum of x[0..n).
void sum_all(const void* x, void* out, DType dtype, std::int64_t n, float multiplier, cudaStream_t stream);

// x viewed as [outer, extent, inner]: out[o, i] = multiplier * sum over e of x[o, e, i].
void sum_dim(const void* x, void* out, DType dtype, std::int64_t outer, std::int64_t extent, std::int64_t inner,
             float multiplier, cudaStream_t stream);

// out[r] = the column of the largest of x[r * row_stride + 0 .. cols), the first of equal
// maxima, a NaN counting as larger than any number (the first NaN wins). One block per row,
// values compared in their own precision (float64 as double, the rest as float). dtype
// float64, float32, bfloat16 or float16; cols in 1 .. 2^31 - 1.
void argmax_rows(const void* x, std::int64_t* out, DType dtype, std::int64_t rows, std::int64_t cols,
                 std::int64_t row_stride, cudaStream_t stream);

}  // namespace zt::cuda
