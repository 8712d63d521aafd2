// Inverted dropout with a Philox mask: element i is kept when uniform(seed, offset, i) >= p
// and then scaled by 1 / (1 - p). The mask is a pure function of (seed, offset, i), so the
// CPU and the GPU draw the same mask bit for bit and the backward regenerates it instead
// of storing it. The same kernel serves both directions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// out[i] = keep(i) ? x[i] * scale : 0 for contiguous x of n elements; scale is 1 / (1 - p),
// or 0 when p is 1.
void dropout_apply(const void* x, void* out, DType dtype, std::int64_t n, float p, float scale, std::uint64_t seed,
                   std::uint64_t offset, cudaStream_t stream);

}  // namespace zt::cuda
