// The Hopper backward's block: its shape and shared-memory plan, the key tile it owns (the
// prefix's tiles first, then the sequence's) and the query tiles of the heads of its kv group
// that it loops over (all of them, or one share when the group's heads are split over several
// blocks), skipping those wholly before the tile under causal masking.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cuda/attention/flash/flash_attention_common.cuh"
#include "cuda/common/hopper/tma.cuh"
#include "cuda/common/hopper/wgmma.cuh"

namespace zt::cuda::hopper_detail {

// 1 producer warpgroup + 2 consumer warpgroups of 64 keys; query tiles of kBlockM rows (Q, dO,
// and their lse and delta) in a ring of kStages. Shared memory (1024-byte aligned): K, V
// [kD/64][kBlockN][64]; per stage Q, dO [kD/64][kBlockM][64]; dSᵀ [2][kBlockN][kBlockM];
// double-buffered lse, delta [2][kBlockM] floats; per consumer a dQ tile [kBlockM][kDqPitch] floats;
// then the barriers.
template <int kDT>
struct BackwardShape {
  static constexpr int kD = kDT;
  static constexpr int kBlockN = 128;
  static constexpr int kBlockM = 64;
  static constexpr int kStages = 2;
  static constexpr int kThreads = 384;
  static constexpr int kConsumerThreads = 256;
  static constexpr int kConsumerWarps = 8;
  static constexpr int kKvBytes = kBlockN * kD * 2;
  static constexpr int kQBytes = kBlockM * kD * 2;
  static constexpr int kDsBytes = kBlockN * kBlockM * 2;
  static constexpr int kVOffset = kKvBytes;
  static constexpr int kStageOffset = 2 * kKvBytes;
  static constexpr int kDsOffset = kStageOffset + kStages * 2 * kQBytes;
  static constexpr int kStatsOffset = kDsOffset + 2 * kDsBytes;
  static constexpr int kStatsBytes = 2 * kBlockM * 4;
  static constexpr int kDqPitch = 68;  // floats per row: 64, padded against bank conflicts
  static constexpr int kDqOffset = kStatsOffset + 2 * kStatsBytes;
  static constexpr int kDqBytes = kBlockM * kDqPitch * 4;
  static constexpr int kBarrierOffset = kDqOffset + 2 * kDqBytes;
  static constexpr int kBarriers = 1 + 2 * kStages;  // K and V full; per stage full and empty
  static constexpr int kSharedBytes = kBarrierOffset + 8 * kBarriers + 1024;
  // dQ = dS·K per query tile, split over the two consumers: at head_dim 128 each takes 64 of
  // the columns over all keys; at 64 each takes all columns over its own 64 keys.
  static constexpr bool kDqSplitsKeys = kD == 64;
};

struct BackwardMaps {
  CUtensorMap q, grad_out, k, v, prefix_k, prefix_v;
};

// What the backward kernel reads and writes besides the tensor maps.
struct BackwardArgs {
  const std::int32_t* cu_seqlens;
  const float* lse_log2;  // [heads][tokens]: lse · log2 e
  const float* delta;     // [heads][tokens]: rowsum(dO ∘ O)
  float* dq_accum;        // [tokens][heads][head_dim], fp32, added to
  void *grad_k, *grad_v, *grad_prefix_k, *grad_prefix_v;
  // Blocks that share one key tile of one kv head, each taking an equal share of the group's
  // heads. Above 1 their dK and dV are partial sums, added in fp32 into dk_sum and dv_sum
  // ([tokens][kv_heads][head_dim]) and converted afterwards; there is no prefix then.
  int head_splits;
  float *dk_sum, *dv_sum;
};

// Which piece of work block `index` of the 1-D grid takes. The key tile varies slowest, so the
// blocks are dispatched heaviest first: under causal masking a key tile near the start is seen
// by nearly every query tile, one near the end by few, and the light blocks fill in the tail.
struct BackwardWork {
  int tile, g, split, b;
};

__device__ __forceinline__ BackwardWork backward_work(int index, int kv_heads, int splits, int batch) {
  BackwardWork w;
  w.b = index % batch;
  index /= batch;
  w.split = index % splits;
  index /= splits;
  w.g = index % kv_heads;
  w.tile = index / kv_heads;
  return w;
}

template <typename Shape>
struct BackwardSharedPlan : hopper::SharedMemoryPlan {
  __device__ __forceinline__ explicit BackwardSharedPlan(const unsigned char* shared)
      : SharedMemoryPlan(shared, Shape::kBarrierOffset) {}
  __device__ __forceinline__ std::uint32_t k() const { return base; }
  __device__ __forceinline__ std::uint32_t v() const { return base + Shape::kVOffset; }
  __device__ __forceinline__ std::uint32_t q(int stage) const {
    return base + Shape::kStageOffset + stage * 2 * Shape::kQBytes;
  }
  __device__ __forceinline__ std::uint32_t grad_out(int stage) const { return q(stage) + Shape::kQBytes; }
  __device__ __forceinline__ std::uint32_t ds(int buffer) const {
    return base + Shape::kDsOffset + buffer * Shape::kDsBytes;
  }
  __device__ __forceinline__ std::uint32_t kv_full() const { return barrier(0); }
  __device__ __forceinline__ std::uint32_t full(int stage) const { return barrier(1 + stage); }
  __device__ __forceinline__ std::uint32_t empty(int stage) const { return barrier(1 + Shape::kStages + stage); }
  // lse then delta of the query tile in stats buffer `buffer` (steps alternate).
  __device__ __forceinline__ std::uint32_t lse(int buffer) const {
    return base + Shape::kStatsOffset + buffer * Shape::kStatsBytes;
  }
  __device__ __forceinline__ std::uint32_t dq(int consumer) const {
    return base + Shape::kDqOffset + consumer * Shape::kDqBytes;
  }
};

template <typename Shape>
struct BackwardBlock {
  static constexpr int kBlockM = Shape::kBlockM, kBlockN = Shape::kBlockN;
  const AttentionDims& dims;
  BackwardWork work;
  int g, b, group;
  int heads;  // of the group, from head g · group + work.split · heads on
  attention_detail::Sequence seq;
  bool prefix_tile;
  int k0;    // first key: of the prefix, or of the sequence
  int keys;  // keys of the tile's source: prefix_len or the sequence's length
  int first_m, m_tiles, steps;

  __device__ __forceinline__ BackwardBlock(const AttentionDims& dims_, const std::int32_t* cu_seqlens, int splits)
      : dims(dims_),
        work(backward_work(blockIdx.x, dims_.num_kv_heads, splits, dims_.batch)),
        g(work.g),
        b(work.b),
        group(dims_.num_heads / dims_.num_kv_heads),
        heads(group / splits),
        seq(attention_detail::sequence(cu_seqlens, work.b)) {
    const int prefix_tiles = flash_detail::tiles_of(dims.prefix_len, kBlockN);
    prefix_tile = work.tile < prefix_tiles;
    k0 = (prefix_tile ? work.tile : work.tile - prefix_tiles) * kBlockN;
    keys = prefix_tile ? dims.prefix_len : seq.len;
    // Causal query tiles wholly before the tile's first own key see none of its keys.
    first_m = dims.causal && !prefix_tile ? k0 / kBlockM : 0;
    m_tiles = max(0, flash_detail::tiles_of(seq.len, kBlockM) - first_m);
    steps = heads * m_tiles;
  }

  __device__ __forceinline__ bool empty() const { return k0 >= keys; }
  __device__ __forceinline__ int head(int step) const { return g * group + work.split * heads + step / m_tiles; }
  __device__ __forceinline__ int first_query(int step) const { return (first_m + step % m_tiles) * kBlockM; }

  __device__ __forceinline__ void load_keys(const BackwardMaps& maps, std::uint32_t sk, std::uint32_t sv,
                                            std::uint32_t barrier) const {
    const int row = prefix_tile ? b * dims.prefix_len + k0 : static_cast<int>(seq.start) + k0;
    hopper::expect_bytes(barrier, 2 * Shape::kKvBytes);
#pragma unroll
    for (int c = 0; c < Shape::kD / 64; ++c) {
      const std::uint32_t offset = c * kBlockN * hopper::kSwizzleBytes;
      hopper::load_box(sk + offset, prefix_tile ? maps.prefix_k : maps.k, 64 * c, g, row, barrier);
      hopper::load_box(sv + offset, prefix_tile ? maps.prefix_v : maps.v, 64 * c, g, row, barrier);
    }
  }

  __device__ __forceinline__ void load_queries(const BackwardMaps& maps, int step, std::uint32_t sq, std::uint32_t sdo,
                                               std::uint32_t barrier) const {
    const int row = static_cast<int>(seq.start) + first_query(step), h = head(step);
    hopper::expect_bytes(barrier, 2 * Shape::kQBytes);
#pragma unroll
    for (int c = 0; c < Shape::kD / 64; ++c) {
      const std::uint32_t offset = c * kBlockM * hopper::kSwizzleBytes;
      hopper::load_box(sq + offset, maps.q, 64 * c, h, row, barrier);
      hopper::load_box(sdo + offset, maps.grad_out, 64 * c, h, row, barrier);
    }
  }

  // Zeroes the entries of Pᵀ (rows: the keys from key_row0 of the tile; columns: queries from
  // i0) that the mask hides; only tiles at the prefix's or sequence's end or the diagonal hold any.
  template <int kN8>
  __device__ __forceinline__ void mask(mma::FragC (&p)[kN8], int key_row0, int i0) const {
    const int first_key = k0 + key_row0;
    const bool tail = i0 + kBlockM > seq.len || first_key + 64 > keys;
    const bool diagonal = dims.causal && !prefix_tile && first_key + 63 > i0;
    if (!tail && !diagonal) return;
    const flash_detail::AccLane lane;
    const int warp_row0 = key_row0 + 16 * ((threadIdx.x / 32) % 4);
#pragma unroll
    for (int n = 0; n < kN8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = k0 + warp_row0 + lane.row(e), i = i0 + lane.col(n, e);
        const bool hidden = j >= keys || i >= seq.len || (dims.causal && !prefix_tile && j > i);
        if (hidden) p[n].x[e] = 0.0f;
      }
  }
};

}  // namespace zt::cuda::hopper_detail
