// The Hopper forward's block: its shape and shared-memory plan, the tensor maps it reads, and
// the order of key tiles (the prefix's, then the sequence's, none past the causal diagonal)
// that the producer loads and the consumers mask in the same way.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cuda/attention/flash/flash_attention_common.cuh"
#include "cuda/common/hopper/tma.cuh"
#include "cuda/common/hopper/wgmma.cuh"

namespace zt::cuda::hopper_detail {

using attention_detail::Sequence;
using flash_detail::tiles_of;

// 1 producer warpgroup + kConsumers consumer warpgroups of 64 query rows; K and V tiles of
// kBlockN keys in a ring of kStages each. Shared memory (1024-byte aligned for the swizzle):
// Q [kD/64][kBlockM][64], K and V [kStages][kD/64][kBlockN][64], then the barriers.
template <int kDT>
struct ForwardShape {
  static constexpr int kD = kDT;
  static constexpr int kConsumers = 2;
  static constexpr int kBlockM = 64 * kConsumers;
  static constexpr int kBlockN = 128;
  static constexpr int kStages = 2;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kConsumerWarps = 4 * kConsumers;
  static constexpr int kQBytes = kBlockM * kD * 2;
  static constexpr int kKvBytes = kBlockN * kD * 2;
  static constexpr int kKOffset = kQBytes;
  static constexpr int kVOffset = kKOffset + kStages * kKvBytes;
  static constexpr int kBarrierOffset = kVOffset + kStages * kKvBytes;
  static constexpr int kBarriers = 1 + 4 * kStages;                           // Q full; K full/empty; V full/empty
  static constexpr int kSharedBytes = kBarrierOffset + 8 * kBarriers + 1024;  // + alignment slack
};

// The tensors as TMA sees them: q [tokens][heads][D], k/v [tokens][kv_heads][D] and the prefix
// [batch · prefix_len][kv_heads][D] (null maps without a prefix).
struct ForwardMaps {
  CUtensorMap q, k, v, prefix_k, prefix_v;
};

// Where the block's shared memory lies and which barrier is which.
template <typename Shape>
struct SharedPlan : hopper::SharedMemoryPlan {
  __device__ __forceinline__ explicit SharedPlan(const unsigned char* shared)
      : SharedMemoryPlan(shared, Shape::kBarrierOffset) {}
  __device__ __forceinline__ std::uint32_t q() const { return base; }
  __device__ __forceinline__ std::uint32_t k(int stage) const {
    return base + Shape::kKOffset + stage * Shape::kKvBytes;
  }
  __device__ __forceinline__ std::uint32_t v(int stage) const {
    return base + Shape::kVOffset + stage * Shape::kKvBytes;
  }
  __device__ __forceinline__ std::uint32_t q_full() const { return barrier(0); }
  __device__ __forceinline__ std::uint32_t k_full(int stage) const { return barrier(1 + stage); }
  __device__ __forceinline__ std::uint32_t k_empty(int stage) const { return barrier(1 + Shape::kStages + stage); }
  __device__ __forceinline__ std::uint32_t v_full(int stage) const { return barrier(1 + 2 * Shape::kStages + stage); }
  __device__ __forceinline__ std::uint32_t v_empty(int stage) const { return barrier(1 + 3 * Shape::kStages + stage); }
};

// The block's query tile (q0 of head h in sequence b; launched last-first so the long causal
// tiles start early) and its key tiles: prefix_tiles of the prefix, then the sequence's.
template <typename Shape>
struct ForwardBlock {
  static constexpr int kBlockM = Shape::kBlockM, kBlockN = Shape::kBlockN;
  const AttentionDims& dims;
  int h, b, g, q0;
  Sequence seq;
  int prefix_tiles, tiles;

  __device__ __forceinline__ ForwardBlock(const AttentionDims& dims_, const std::int32_t* cu_seqlens)
      : dims(dims_),
        h(blockIdx.y),
        b(blockIdx.z),
        g(attention_detail::kv_head(dims_, blockIdx.y)),
        q0((gridDim.x - 1 - blockIdx.x) * kBlockM),
        seq(attention_detail::sequence(cu_seqlens, blockIdx.z)),
        prefix_tiles(tiles_of(dims_.prefix_len, kBlockN)),
        tiles(prefix_tiles + tiles_of(dims_.causal ? min(seq.len, q0 + kBlockM) : seq.len, kBlockN)) {}

  __device__ __forceinline__ bool empty() const { return q0 >= seq.len; }

  // Issues the copies of key tile t (K or V, per `key`) into `dst`, completing on `barrier`.
  __device__ __forceinline__ void load_key_tile(const ForwardMaps& maps, bool key, int t, std::uint32_t dst,
                                                std::uint32_t barrier) const {
    const bool from_prefix = t < prefix_tiles;
    const CUtensorMap& map = from_prefix ? (key ? maps.prefix_k : maps.prefix_v) : (key ? maps.k : maps.v);
    const int row =
        from_prefix ? b * dims.prefix_len + t * kBlockN : static_cast<int>(seq.start) + (t - prefix_tiles) * kBlockN;
    hopper::expect_bytes(barrier, Shape::kKvBytes);
#pragma unroll
    for (int c = 0; c < Shape::kD / 64; ++c)
      hopper::load_box(dst + c * kBlockN * hopper::kSwizzleBytes, map, 64 * c, g, row, barrier);
  }

  __device__ __forceinline__ void load_queries(const ForwardMaps& maps, std::uint32_t dst,
                                               std::uint32_t barrier) const {
    hopper::expect_bytes(barrier, Shape::kQBytes);
#pragma unroll
    for (int c = 0; c < Shape::kD / 64; ++c)
      hopper::load_box(dst + c * kBlockM * hopper::kSwizzleBytes, maps.q, 64 * c, h, static_cast<int>(seq.start) + q0,
                       barrier);
  }

  // Sets the scores of key tile t that a consumer's rows (from row0 of the block, whose lane
  // holds rows row0 + group (+ 8)) must not see to −inf; only tiles that end past the prefix,
  // the sequence or the causal diagonal hold any.
  template <int kN8>
  __device__ __forceinline__ void mask(mma::FragC (&s)[kN8], int t, int warpgroup_row0, int row0) const {
    const flash_detail::AccLane lane;
    if (t < prefix_tiles) {
      const int k0 = t * kBlockN;
      if (k0 + kBlockN <= dims.prefix_len) return;
#pragma unroll
      for (int n = 0; n < kN8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (k0 + lane.col(n, e) >= dims.prefix_len) s[n].x[e] = -INFINITY;
      return;
    }
    const int j0 = (t - prefix_tiles) * kBlockN;
    if (j0 + kBlockN <= seq.len && !(dims.causal && j0 + kBlockN - 1 > q0 + warpgroup_row0)) return;
#pragma unroll
    for (int n = 0; n < kN8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = q0 + row0 + lane.row(e), j = j0 + lane.col(n, e);
        if (j >= seq.len || (dims.causal && j > i)) s[n].x[e] = -INFINITY;
      }
  }
};

}  // namespace zt::cuda::hopper_detail
