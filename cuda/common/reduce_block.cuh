// Block-wide sums for the reduction kernels, in a fixed order (warp shuffles, then warp 0
// over the per-warp totals), so a sum comes out with the same bits on every run.
#pragma once

namespace zt::cuda {

template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Every thread of the block must call it (it synchronizes) and gets the total back.
// blockDim.x must be a multiple of 32. The trailing barrier lets the next call reuse the
// shared slots.
template <typename T>
__device__ T block_sum(T value) {
  __shared__ T warp_totals[32];
  __shared__ T total;
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_sum(value);
  if (lane == 0) warp_totals[warp] = value;
  __syncthreads();
  if (warp == 0) {
    T partial = lane < blockDim.x / 32 ? warp_totals[lane] : T(0);
    partial = warp_sum(partial);
    if (lane == 0) total = partial;
  }
  __syncthreads();
  T result = total;
  __syncthreads();
  return result;
}

}  // namespace zt::cuda
