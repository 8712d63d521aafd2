// Block-wide radix select over order-preserving integer keys of float64 values: the group of
// equal keys where a running weight, summed from the smallest key up, first exceeds a
// threshold. With weight 1 it finds the k-th element (top-k); with each token's probability
// as the weight, where the ascending cumulative mass crosses 1 - top_p (top-p). Weights are
// integers, so the per-bin sums are exact whatever order the atomics land in.
#pragma once

#include <climits>
#include <cstdint>

#include "cuda/sampling/block_scan.cuh"

namespace zt::cuda::sampling {

// Keys ordered as the values are; -0 and +0 share one, as `<` sees them equal.
__device__ __forceinline__ std::uint64_t order_key(double v) {
  const double canonical = v == 0.0 ? 0.0 : v;
  const auto bits = static_cast<std::uint64_t>(__double_as_longlong(canonical));
  return (bits >> 63) ? ~bits : bits | (std::uint64_t{1} << 63);
}

// The value of a key (a canonical zero for a zero).
__device__ __forceinline__ double key_value(std::uint64_t key) {
  const std::uint64_t bits = (key >> 63) ? key & ~(std::uint64_t{1} << 63) : ~key;
  return __longlong_as_double(static_cast<long long>(bits));
}

constexpr int kDigitBits = 11;  // 2048 bins: 24 KiB of shared memory, at most 6 passes
constexpr int kBins = 1 << kDigitBits;

struct SelectShared {
  unsigned count[kBins];
  unsigned long long weight[kBins];
  unsigned long long chosen_below, chosen_weight;
  unsigned chosen_count;
};

// Keys key .. key | (2^(64 - bits) - 1): the elements whose top `bits` bits equal key's.
struct KeyGroup {
  std::uint64_t key = 0;     // the group's smallest key; its only key when bits == 64
  int bits = 0;              // how many high bits the group's keys share
  std::uint64_t below = 0;   // the weight of all smaller keys
  std::uint64_t weight = 0;  // the group's weight
  unsigned count = 0;        // the group's elements
};

__device__ __forceinline__ std::uint64_t group_last_key(const KeyGroup& g) {
  return g.bits == 64 ? g.key : g.key | (~std::uint64_t{0} >> g.bits);
}

// Counts and weighs the next digit of the keys in `g`; returns this thread's smallest and
// largest key of the group through lowest/highest. Only the group's elements are weighed.
// Each thread adds runs of equal digits at once: most keys of a row share their leading
// digits, and one shared atomic per element on a few bins would serialise.
template <typename Key, typename Weight>
__device__ void histogram_digit(int cols, const KeyGroup& g, int shift, unsigned mask, Key key_of, Weight weight_of,
                                SelectShared& sh, std::uint64_t& lowest, std::uint64_t& highest) {
  unsigned run_digit = 0, run_count = 0;
  unsigned long long run_weight = 0;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    const std::uint64_t key = key_of(i);
    if (g.bits > 0 && ((key ^ g.key) >> (64 - g.bits)) != 0) continue;
    lowest = key < lowest ? key : lowest;
    highest = key > highest ? key : highest;
    const unsigned digit = static_cast<unsigned>(key >> shift) & mask;
    if (run_count > 0 && digit != run_digit) {
      atomicAdd(&sh.count[run_digit], run_count);
      atomicAdd(&sh.weight[run_digit], run_weight);
      run_count = 0, run_weight = 0;
    }
    run_digit = digit, ++run_count, run_weight += weight_of(i);
  }
  if (run_count > 0) {
    atomicAdd(&sh.count[run_digit], run_count);
    atomicAdd(&sh.weight[run_digit], run_weight);
  }
}

// Chooses the bin of the histogram where below + the weights up to it first exceed
// `threshold` (else the last non-empty bin) and leaves its count, weight and the weight below
// it in sh.chosen_*. Each thread owns kBins / kThreads consecutive bins.
template <int kThreads>
__device__ int choose_bin(std::uint64_t below, std::uint64_t threshold, SelectShared& sh) {
  constexpr int kPerThread = kBins / kThreads;
  static_assert(kPerThread * kThreads == kBins, "kBins must be a multiple of the block size");
  const int first = static_cast<int>(threadIdx.x) * kPerThread;
  unsigned long long own = 0;
  for (int b = first; b < first + kPerThread; ++b) own += sh.weight[b];
  unsigned long long total;
  const unsigned long long before = block_exclusive_sum(own, total);
  int crossing = INT_MAX, last = -1;
  unsigned long long running = below + before;
  for (int b = first; b < first + kPerThread; ++b) {
    if (sh.count[b] > 0) {
      last = b;
      if (crossing == INT_MAX && running + sh.weight[b] > threshold) crossing = b;
    }
    running += sh.weight[b];
  }
  crossing = block_reduce(crossing, INT_MAX, MinOp{});
  last = block_reduce(last, -1, MaxOp{});
  const int bin = crossing != INT_MAX ? crossing : last;
  if (bin >= first && bin < first + kPerThread) {
    unsigned long long under = below + before;
    for (int b = first; b < bin; ++b) under += sh.weight[b];
    sh.chosen_below = under, sh.chosen_weight = sh.weight[bin], sh.chosen_count = sh.count[bin];
  }
  __syncthreads();
  return bin;
}

// Over the elements i < cols with key_of(i) and weight_of(i): the group of equal keys where the
// weight summed from the smallest key up first exceeds `threshold`, else the group of the
// largest key. It descends kDigitBits at a time and returns early with a coarser group when
// that already decides the caller's question: the group holds one element, or (stop_on_fit)
// the weight up to its end is exactly threshold + 1. A group whose keys all turn out equal
// returns as that key. The weights below and in the group must fit 64 bits.
template <int kThreads, typename Key, typename Weight>
__device__ KeyGroup select_key_group(int cols, std::uint64_t threshold, bool stop_on_fit, Key key_of, Weight weight_of,
                                     SelectShared& sh) {
  KeyGroup g;
  g.count = static_cast<unsigned>(cols);
  for (;;) {
    const int width = 64 - g.bits < kDigitBits ? 64 - g.bits : kDigitBits;
    const int shift = 64 - g.bits - width;
    for (int b = threadIdx.x; b < kBins; b += blockDim.x) sh.count[b] = 0, sh.weight[b] = 0;
    __syncthreads();
    std::uint64_t lowest = ~std::uint64_t{0}, highest = 0;
    histogram_digit(cols, g, shift, (1u << width) - 1, key_of, weight_of, sh, lowest, highest);
    __syncthreads();
    lowest = block_reduce(lowest, ~std::uint64_t{0}, MinOp{});
    highest = block_reduce(highest, std::uint64_t{0}, MaxOp{});
    if (lowest == highest) {  // one key: g.below, g.count stay; the weight is all of this pass's
      unsigned long long own = 0;
      for (int b = threadIdx.x; b < kBins; b += blockDim.x) own += sh.weight[b];
      g.weight = block_reduce(own, 0ull, SumOp{});
      g.key = lowest, g.bits = 64;
      return g;
    }
    const int bin = choose_bin<kThreads>(g.below, threshold, sh);
    g.key |= static_cast<std::uint64_t>(bin) << shift;
    g.bits += width;
    g.below = sh.chosen_below, g.weight = sh.chosen_weight, g.count = sh.chosen_count;
    __syncthreads();  // all have read sh.chosen_* before the next pass
    if (g.bits == 64 || g.count == 1 || (stop_on_fit && g.below + g.weight == threshold + 1)) return g;
  }
}

}  // namespace zt::cuda::sampling
