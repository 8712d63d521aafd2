// One rotary pair's arithmetic, shared by the RoPE kernel (rope.cu) and the epilogue of the
// few-row GEMM that rotates q and k as it writes them (cuda/gemm/few_rows/): both round as
// torch's eager ops do for 16-bit dtypes (cos, sin, each product and the sum to the dtype),
// so the fused and the separate launches give the same bits.
#pragma once

#include "cuda/common/cuda_common.cuh"

namespace zt::cuda {

// cos and sin of position * inv_freq, each rounded to T; inverse: the sine negated (backward).
template <typename T>
__device__ __forceinline__ void rope_cos_sin(float position, float inv_freq, bool inverse, float& c, float& s) {
  const float angle = __fmul_rn(position, inv_freq);
  const float sine = sinf(angle);
  c = round_through<T>(cosf(angle));
  s = round_through<T>(inverse ? -sine : sine);
}

// The pair (lo, hi) rotated by (c, s), each product and the result rounded to T.
template <typename T>
__device__ __forceinline__ void rope_rotate_pair(float& lo, float& hi, float c, float s) {
  const float new_lo = __fsub_rn(round_through<T>(__fmul_rn(lo, c)), round_through<T>(__fmul_rn(hi, s)));
  const float new_hi = __fadd_rn(round_through<T>(__fmul_rn(hi, c)), round_through<T>(__fmul_rn(lo, s)));
  lo = new_lo;
  hi = new_hi;
}

}  // namespace zt::cuda
