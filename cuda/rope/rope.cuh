// Rotary position embedding on [tokens, heads, head_dim] tensors whose heads and dims are
// contiguous (a token stride of its own allows head slices of a fused projection), out of
// place or in place, q and k together in one launch. Token t is rotated by angle
// position[t] * inv_freq[i] for pair i of its first rotary_dim dims; the remaining dims are
// copied (out of place) or left alone (in place). Pairs are (i, i + rotary_dim/2)
// (rotate-half, Qwen) or (2i, 2i+1) (interleaved, GLM). The angle and cos/sin are float32;
// for 16-bit dtypes cos, sin, each product and the sum round to the dtype, as torch's eager
// ops do. A decode or prefill step may also have k's rotated heads and v put in a paged KV
// cache by the same launch (RopeCacheWrite), instead of a second kernel that reads k back.
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
  std::int64_t head_dim = 0;
  std::int64_t rotary_dim = 0;  // even, <= head_dim; rotary_dim / 2 <= kMaxRopePairs
  bool interleaved = false;
};

// One tensor to rotate: element (t, h, d) is at x[t * x_token_stride + h * head_dim + d],
// written to y likewise. y == x rotates in place. heads 0: nothing to do.
struct RopeOperand {
  const void* x = nullptr;
  void* y = nullptr;
  std::int64_t heads = 0;
  std::int64_t x_token_stride = 0;
  std::int64_t y_token_stride = 0;
};

// Where a launch also stores k's heads, rotated, and v's heads: the pools of
// cuda/attention/decode/kv_cache_write.cuh ([num_slots, k.heads, head_dim], contiguous), token t
// at row slots[t]; a negative slot or one past num_slots skips its token, as write_kv_slots does.
struct RopeCacheWrite {
  const void* v = nullptr;  // [tokens, k.heads, head_dim], heads and dims contiguous
  std::int64_t v_token_stride = 0;
  const std::int64_t* slots = nullptr;  // device int64 [tokens]
  void* key_pool = nullptr;
  void* value_pool = nullptr;
  std::int64_t num_slots = 0;
  void* v_out = nullptr;  // optional: v's heads also copied here (a prefill's contiguous v)
  std::int64_t v_out_token_stride = 0;
};

// positions: int32 or int64 [tokens]. inverse rotates by -angle (the backward). q and k
// share dtype, positions and shape; k may have no heads. cache: null, or where k and v also
// go (forward only).
void rope_rotate(const RopeOperand& q, const RopeOperand& k, DType dtype, const void* positions, DType position_dtype,
                 const RopeShape& shape, const RopeFrequencies& frequencies, bool inverse, cudaStream_t stream,
                 const RopeCacheWrite* cache = nullptr);

}  // namespace zt::cuda
