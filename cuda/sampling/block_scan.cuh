// Block-wide scans and searches of the sampling kernel, on the reductions of
// cuda/common/shuffle_reduce.cuh. Their order is fixed by blockDim.x alone (warp shuffles,
// then warp 0 over the warp results), so a float64 sum has the same bits on every run. Every
// thread of the block calls them (they synchronise); blockDim.x is a multiple of 32. The
// trailing barrier of each lets the next call reuse its shared slots.
//
// The id-order functions give each thread one contiguous chunk of the row, so a prefix over the
// threads is a prefix in id order.
#pragma once

#include <climits>
#include <cstdint>

#include "cuda/common/shuffle_reduce.cuh"

namespace zt::cuda::sampling {

// The sum of `value` over the threads before this one (0 for thread 0); `total` gets the sum
// over all. Each partial sum is built by appending, never by subtracting, so float64 prefixes
// carry no cancellation.
template <typename T>
__device__ T block_exclusive_sum(T value, T& total) {
  __shared__ T warp_before[32];
  __shared__ T block_total;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  T inclusive = value;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T up = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += up;
  }
  if (lane == 31) warp_before[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    T running = lane < warps ? warp_before[lane] : T(0);
    for (int offset = 1; offset < 32; offset <<= 1) {
      const T up = __shfl_up_sync(0xffffffffu, running, offset);
      if (lane >= offset) running += up;
    }
    const T before = __shfl_up_sync(0xffffffffu, running, 1);
    if (lane < warps) warp_before[lane] = lane == 0 ? T(0) : before;
    if (lane == 31) block_total = running;
  }
  __syncthreads();
  T in_warp = __shfl_up_sync(0xffffffffu, inclusive, 1);
  if (lane == 0) in_warp = T(0);
  const T out = warp_before[warp] + in_warp;
  total = block_total;
  __syncthreads();
  return out;
}

// A value with its index, for block_first_argmax.
struct Best {
  double value;
  int index;
};
__device__ __forceinline__ Best shfl_xor(Best b, int offset) {
  return {zt::cuda::shfl_xor(b.value, offset), zt::cuda::shfl_xor(b.index, offset)};
}
// std::max_element's choice between two: the larger value, on a tie the smaller index. A NaN
// is never larger, so it is never taken.
struct FirstLargest {
  __device__ Best operator()(Best a, Best b) const {
    return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
  }
};

// The index std::max_element picks from value(0 .. cols): the first of the largest values.
// A NaN never compares larger, so NaNs are passed over, unless value(0) is one (then 0).
template <typename Value>
__device__ int block_first_argmax(int cols, Value value) {
  const FirstLargest first_largest;
  Best best{-INFINITY, INT_MAX};  // what every element, -inf included, precedes
  for (int i = threadIdx.x; i < cols; i += blockDim.x) best = first_largest(best, Best{value(i), i});
  best = block_reduce(best, Best{-INFINITY, INT_MAX}, first_largest);
  return isnan(value(0)) ? 0 : best.index;
}

// This thread's contiguous share [begin, end) of 0 .. cols.
struct Chunk {
  int begin, end;
};
__device__ __forceinline__ Chunk chunk_of(int cols) {
  const std::int64_t size = (static_cast<std::int64_t>(cols) + blockDim.x - 1) / blockDim.x;
  const std::int64_t begin = size * threadIdx.x, end = begin + size;
  return {static_cast<int>(begin < cols ? begin : cols), static_cast<int>(end < cols ? end : cols)};
}

// The index of the element of rank `rank` (0-based, in index order) among those i < cols with
// member(i); rank is below their count.
template <typename Member>
__device__ int block_index_of_rank(int cols, unsigned rank, Member member) {
  __shared__ int result;
  const Chunk chunk = chunk_of(cols);
  unsigned own = 0;
  for (int i = chunk.begin; i < chunk.end; ++i) own += member(i) ? 1u : 0u;
  unsigned total;
  unsigned seen = block_exclusive_sum(own, total);
  if (rank >= seen && rank < seen + own)
    for (int i = chunk.begin; i < chunk.end; ++i) {
      if (!member(i)) continue;
      if (seen == rank) {
        result = i;
        break;
      }
      ++seen;
    }
  __syncthreads();
  const int out = result;
  __syncthreads();
  return out;
}

// The inverse-CDF pick: the first i in index order whose cumulative probability exceeds
// `uniform` and whose own probability prob(i) is positive; INT_MAX when there is none. The
// cumulative sum is each chunk's running sum on top of the chunks before it.
template <typename Prob>
__device__ int block_first_crossing(int cols, double uniform, Prob prob) {
  const Chunk chunk = chunk_of(cols);
  double own = 0.0;
  for (int i = chunk.begin; i < chunk.end; ++i) own += prob(i);
  double total;
  double cumulative = block_exclusive_sum(own, total);
  int found = INT_MAX;
  for (int i = chunk.begin; i < chunk.end; ++i) {
    const double p = prob(i);
    cumulative += p;
    if (uniform < cumulative && p > 0.0) {
      found = i;
      break;
    }
  }
  return block_reduce(found, INT_MAX, MinOp{});
}

}  // namespace zt::cuda::sampling
