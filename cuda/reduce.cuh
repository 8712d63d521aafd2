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

}  // namespace zt::cuda
