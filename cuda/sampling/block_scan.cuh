// Block-wide reductions and scans of the sampling kernel. Their order is fixed by blockDim.x
// alone (warp shuffles, then warp 0 over the warp results), so a float64 sum has the same bits
// on every run. Every thread of the block calls them (they synchronise); blockDim.x is a
// multiple of 32. The trailing barrier of each lets the next call reuse its shared slots.
//
// The id-order functions give each thread one contiguous chunk of the row, so a prefix over the
// threads is a prefix in id order.
#pragma once

#include <climits>
#include <cstdint>

namespace zt::cuda::sampling {

struct MaxOf {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct MinOf {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
struct SumOf {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

// op over every thread's value; `identity` fills the slots of absent warps.
template <typename T, typename Op>
__device__ T block_reduce(T value, T identity, Op op) {
  __shared__ T warp_results[32];
  __shared__ T result;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  if (warp == 0) {
    T v = lane < blockDim.x / 32 ? warp_results[lane] : identity;
    for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (lane == 0) result = v;
  }
  __syncthreads();
  const T out = result;
  __syncthreads();
  return out;
}

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

// The index std::max_element picks from value(0 .. cols): the first of the largest values.
// A NaN never compares larger, so NaNs are passed over, unless value(0) is one (then 0).
template <typename Value>
__device__ int block_first_argmax(int cols, Value value) {
  __shared__ double warp_values[32];
  __shared__ int warp_indices[32];
  __shared__ int result;
  double best = -INFINITY;
  int best_index = INT_MAX;  // what every element, -inf included, precedes
  auto take = [&](double v, int i) {
    if (v > best || (v == best && i < best_index)) best = v, best_index = i;
  };
  for (int i = threadIdx.x; i < cols; i += blockDim.x) take(value(i), i);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const double v = __shfl_xor_sync(0xffffffffu, best, offset);
    take(v, __shfl_xor_sync(0xffffffffu, best_index, offset));
  }
  if (lane == 0) warp_values[warp] = best, warp_indices[warp] = best_index;
  __syncthreads();
  if (warp == 0) {
    best = -INFINITY, best_index = INT_MAX;
    if (lane < blockDim.x / 32) take(warp_values[lane], warp_indices[lane]);
    for (int offset = 16; offset > 0; offset >>= 1) {
      const double v = __shfl_xor_sync(0xffffffffu, best, offset);
      take(v, __shfl_xor_sync(0xffffffffu, best_index, offset));
    }
    if (lane == 0) result = isnan(value(0)) ? 0 : best_index;
  }
  __syncthreads();
  const int out = result;
  __syncthreads();
  return out;
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
  return block_reduce(found, INT_MAX, MinOf());
}

}  // namespace zt::cuda::sampling
