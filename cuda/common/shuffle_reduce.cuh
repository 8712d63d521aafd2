// Reductions by warp shuffles, written once for every kernel family: over the 4 lanes of an
// mma quad, over a warp, and over a block. Device code only: include from .cu/.cuh files.
//
// Why one home: a reduction's order decides its bits. Each one here is a butterfly (xor
// offsets 16, 8, 4, 2, 1 in a warp; 1, 2 in a quad) in which every lane combines the same two
// operands at each step, so all lanes end with the same bits, and a block reduction combines
// the per-warp results by the same butterfly, so a float sum has the same bits on every run
// for a given blockDim.x. Kernels whose tests compare bits rely on this order: change it here
// only on purpose, and then for all of them.
//
// warp_reduce shuffles with shfl_xor; a kernel reducing its own struct (a value with its
// index, a running max with its sum) declares `shfl_xor(Struct, int)` beside the struct, where
// argument-dependent lookup finds it.
#pragma once

#include <cuda_runtime.h>

namespace zt::cuda {

inline constexpr unsigned kFullWarpMask = 0xffffffffu;

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
// fmaxf's max: a NaN operand is passed over, where MaxOp would keep it in one order.
struct FmaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename T>
__device__ __forceinline__ T shfl_xor(T value, int offset) {
  return __shfl_xor_sync(kFullWarpMask, value, offset);
}

// op over the 32 lanes of the warp; every lane gets the result.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T value, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = op(value, shfl_xor(value, offset));
  return value;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
  return warp_reduce(value, SumOp{});
}
__device__ __forceinline__ float warp_max(float value) { return warp_reduce(value, FmaxOp{}); }

// Over the 4 lanes of a quad, which together hold one row of an mma accumulator.
__device__ __forceinline__ float quad_sum(float value) {
  value += shfl_xor(value, 1);
  return value + shfl_xor(value, 2);
}
__device__ __forceinline__ float quad_max(float value) {
  value = fmaxf(value, shfl_xor(value, 1));
  return fmaxf(value, shfl_xor(value, 2));
}

namespace shuffle_reduce_detail {
// One warp result per warp of the block, shared by every block_reduce over T in a kernel.
template <typename T>
__device__ __forceinline__ T* warp_results() {
  __shared__ T slots[32];
  return slots;
}
}  // namespace shuffle_reduce_detail

// op over every thread of the block; every thread gets the result. `identity` fills the slots
// of warps the block does not have. Every thread of the block must call it (it synchronizes);
// blockDim.x is a multiple of 32, at most 1024. Anything the block did to shared memory
// before the call is ordered by a barrier before anything it does after.
template <typename T, typename Op>
__device__ T block_reduce(T value, T identity, Op op) {
  T* warp_results = shuffle_reduce_detail::warp_results<T>();
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_reduce(value, op);
  __syncthreads();  // the previous call's readers are done with the slots
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  value = lane < blockDim.x / 32 ? warp_results[lane] : identity;
  return warp_reduce(value, op);
}

template <typename T>
__device__ T block_sum(T value) {
  return block_reduce(value, T(0), SumOp{});
}

}  // namespace zt::cuda
