// Rotary position embedding on contiguous [tokens, heads, head_dim] tensors, out of place.
// Token t is rotated by angle position[t] * inv_freq[i] for pair i of its first rotary_dim
// dims; the remaining dims are copied. Pairs are (i, i + rotary_dim/2) (rotate-half, Qwen)
// or (2i, 2i+1) (interleaved, GLM). The angle and cos/sin are float32; for 16-bit dtypes
// cos, sin, each product and the sum round to the dtype, as torch's eager ops do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

inline constexpr int kMaxRopePairs = 256;

// Passed by value as a kernel argument: the host computes inv_freq once, so the CPU
// reference and the kernel rotate by bit-identical frequencies.
struct RopeFrequencies {
  float inv_freq[kMaxRopePairs];
};

struct RopeShape {
  std::int64_t tokens = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t rotary_dim = 0;  // even, <= head_dim; rotary_dim / 2 <= kMaxRopePairs
  bool interleaved = false;
};

// positions: int32 or int64 [tokens]. inverse rotates by -angle (the backward).
void rope_rotate(const void* x, void* y, DType dtype, const void* positions, DType position_dtype,
                 const RopeShape& shape, const RopeFrequencies& frequencies, bool inverse, cudaStream_t stream);

}  // namespace zt::cuda
