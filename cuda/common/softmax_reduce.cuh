// Block-wide reductions for the row kernels of softmax and cross-entropy, which give one
// block to each row. Device code only: include from .cu files.
#pragma once

#include <cuda_runtime.h>

namespace zt::cuda {

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

template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Reduces `value` over the block and returns the result to every thread. blockDim.x must be
// a multiple of 32 and at most 1024; every thread of the block must call it (it
// synchronises). `scratch` is a __shared__ array of 32 T, reusable by the next call.
template <typename T, typename Op>
__device__ T block_reduce(T value, T identity, T* scratch, Op op) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_reduce(value, op);
  __syncthreads();  // the previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : identity;
  return warp_reduce(value, op);
}

// Threads for a block that walks a row of `cols` elements: a multiple of 32, at most 1024.
inline int row_threads(long long cols) {
  if (cols >= 8192) return 1024;
  if (cols >= 256) return 256;
  return cols <= 32 ? 32 : static_cast<int>((cols + 31) / 32 * 32);
}

}  // namespace zt::cuda
