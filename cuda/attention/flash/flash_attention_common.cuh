// Pieces the tensor-core attention kernels share: the packed layout's addressing (from
// ../attention_layout.cuh), where a lane's accumulator entries lie, masking, the block of the
// query-tile kernels (the forward and the deterministic dQ), and the host-side dispatch over
// dtype and head_dim.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "cuda/attention/attention_layout.cuh"
#include "cuda/common/cuda_common.cuh"
#include "cuda/common/mma_warp.cuh"
#include "cuda/common/tile_smem.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda::flash_detail {

using attention_detail::allow_shared_bytes;
using attention_detail::key_row;
using attention_detail::kv_head;
using attention_detail::Operands;
using attention_detail::Sequence;
using attention_detail::sequence;
using attention_detail::token_row;
using attention_detail::visible;
using mma::FragA;
using mma::FragC;

inline constexpr float kLog2e = 1.4426950408889634f;

__host__ __device__ constexpr int tiles_of(int n, int tile) { return (n + tile - 1) / tile; }

// A lane holds rows `group` and `group + 8` of its warp's 16-row accumulator slab, columns
// 2·quad and 2·quad + 1 of each 8-column n-block.
struct AccLane {
  int group, quad;
  __device__ __forceinline__ AccLane() : group((threadIdx.x % 32) / 4), quad(threadIdx.x % 4) {}
  __device__ __forceinline__ int row(int e) const { return group + 8 * (e / 2); }
  __device__ __forceinline__ int col(int n, int e) const { return 8 * n + 2 * quad + (e & 1); }
};

// Sets the entries of a warp's accumulators (rows from row0, columns from col0) that
// keep(row, col) rejects to `value`.
template <int kN8, typename Keep>
__device__ __forceinline__ void mask_accumulators(FragC (&c)[kN8], int row0, int col0, Keep&& keep, float value) {
  const AccLane lane;
#pragma unroll
  for (int n = 0; n < kN8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (!keep(row0 + lane.row(e), col0 + lane.col(n, e))) c[n].x[e] = value;
}

// Folds one tile of raw scores into the row statistics (running max m and sum l of the lane's
// two rows) and leaves the unnormalised probabilities exp(scale·s − m) in s; `rescale` is what
// the rows' earlier output must be multiplied by (rescale_rows). A row that has seen only
// masked keys keeps m = −inf and is computed against 0, which keeps everything finite.
template <int kN8>
__device__ __forceinline__ void online_softmax(FragC (&s)[kN8], float (&m)[2], float (&l)[2], float (&rescale)[2],
                                               float scale_log2) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float row_max = m[half];
#pragma unroll
    for (int n = 0; n < kN8; ++n) row_max = fmaxf(row_max, fmaxf(s[n].x[2 * half], s[n].x[2 * half + 1]));
    row_max = quad_max(row_max);
    const float reference = row_max == -INFINITY ? 0.0f : row_max * scale_log2;
    rescale[half] = mma::exp2_approx(m[half] * scale_log2 - reference);
    m[half] = row_max;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < kN8; ++n)
#pragma unroll
      for (int e = 2 * half; e < 2 * half + 2; ++e) {
        s[n].x[e] = mma::exp2_approx(fmaf(s[n].x[e], scale_log2, -reference));
        sum += s[n].x[e];
      }
    l[half] = l[half] * rescale[half] + sum;
  }
}

template <int kD8>
__device__ __forceinline__ void rescale_rows(FragC (&o)[kD8], const float (&rescale)[2]) {
#pragma unroll
  for (int d = 0; d < kD8; ++d)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[d].x[e] *= rescale[e / 2];
}

// Σ_c out[c]·grad_out[c] over one kD-wide row (the backward's delta), read by a warp in
// 16-byte chunks (lane l: chunks l, l + 32, ...) and summed across it; every lane gets it.
template <typename T, int kD>
__device__ __forceinline__ float row_dot(const T* out, const T* grad_out, int lane) {
  float sum = 0.0f;
  for (int c = lane; c < kD / 8; c += 32) {
    const uint4 o = *reinterpret_cast<const uint4*>(out + c * 8);
    const uint4 d = *reinterpret_cast<const uint4*>(grad_out + c * 8);
    const T* ov = reinterpret_cast<const T*>(&o);
    const T* dv = reinterpret_cast<const T*>(&d);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += static_cast<float>(ov[e]) * static_cast<float>(dv[e]);
  }
  return warp_sum(sum);
}

// The block shape of the query-tile kernels (the forward, the deterministic dQ): 16 query rows
// per warp, key tiles of kBlockN. Shared memory holds kQueryTiles query-side tiles (Q, reused
// to stage the output, then dO where the kernel reads it), then K and V, each double-buffered.
template <int kD, int kWarps, int kBlockNT, int kQueryTiles>
struct QueryTileShape {
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockM = 16 * kWarps;
  static constexpr int kBlockN = kBlockNT;
  using QTile = tile::SmemTile<kBlockM, kD>;
  using KvTile = tile::SmemTile<kBlockN, kD>;
  static constexpr int kSharedBytes = kQueryTiles * QTile::kBytes + 4 * KvTile::kBytes;
};

// A query-tile kernel's block: query tile q0 of head h in sequence b, and the key tiles its
// queries see, streamed through the double-buffered K and V tiles at sk and sv. Query tiles
// are launched last-first: under causal masking they have the most keys, so the long blocks
// start before the short ones.
template <typename T, typename Shape>
struct QueryBlock {
  using QTile = typename Shape::QTile;
  using KvTile = typename Shape::KvTile;
  static constexpr int kBlockM = Shape::kBlockM, kBlockN = Shape::kBlockN, kD = QTile::kCols;

  const AttentionDims& dims;
  const Operands<T> x;
  const int h, b, q0;
  const Sequence seq;
  const int prefix, keys, g;
  const int tiles;  // key tiles, none past the causal diagonal
  const std::uint32_t sk, sv;

  __device__ __forceinline__ QueryBlock(const AttentionDims& dims_, const AttentionInputs& in, std::uint32_t sk_,
                                        std::uint32_t sv_)
      : dims(dims_),
        x(in),
        h(blockIdx.y),
        b(blockIdx.z),
        q0((gridDim.x - 1 - blockIdx.x) * kBlockM),
        seq(sequence(in.cu_seqlens, b)),
        prefix(dims.prefix_len),
        keys(prefix + seq.len),
        g(kv_head(dims, h)),
        tiles(tiles_of(dims.causal ? prefix + min(seq.len, q0 + kBlockM) : keys, kBlockN)),
        sk(sk_),
        sv(sv_) {}

  // The grid covers the longest sequence; shorter ones leave blocks without queries.
  __device__ __forceinline__ bool empty() const { return q0 >= seq.len; }

  // Row r of the tile in a [total_tokens, num_heads, head_dim] array (queries, dO, outputs).
  template <typename P>
  __device__ __forceinline__ P row(P base, int r) const {
    return token_row(base, seq.start + q0 + r, dims.num_heads, h, kD);
  }

  // Starts copying the tile's rows of `base` into the query-side tile at `dst`.
  __device__ __forceinline__ void load_rows_async(std::uint32_t dst, const T* base) const {
    tile::load_tile_async<QTile, Shape::kThreads>(
        dst, min(kBlockM, seq.len - q0), [&](int r) { return row(base, r); }, base);
  }

  // Where key tile n lands: buffer n & 1 of the K and V tiles.
  __device__ __forceinline__ std::uint32_t k_tile(int n) const { return sk + (n & 1) * KvTile::kBytes; }
  __device__ __forceinline__ std::uint32_t v_tile(int n) const { return sv + (n & 1) * KvTile::kBytes; }

  // Starts copying key tile n (the prefix's keys first) to where it lands.
  __device__ __forceinline__ void load_key_tile_async(int n) const {
    const int k0 = n * kBlockN, valid = min(kBlockN, keys - k0);
    tile::load_tile_async<KvTile, Shape::kThreads>(
        k_tile(n), valid, [&](int r) { return key_row(x.k, x.prefix_k, dims, seq, b, k0 + r, g); }, x.k);
    tile::load_tile_async<KvTile, Shape::kThreads>(
        v_tile(n), valid, [&](int r) { return key_row(x.v, x.prefix_v, dims, seq, b, k0 + r, g); }, x.v);
  }

  // S = Q·Kᵀ of the warp's 16 query rows (row0 on) and key tile n, once that tile has landed.
  // Starts tile n + 1's copies first; on the first tile, moves the warp's rows of the Q tile
  // at sq into q_frag.
  __device__ __forceinline__ void scores(FragC (&s)[kBlockN / 8], FragA (&q_frag)[kD / 16], int n, std::uint32_t sq,
                                         int row0) const {
    tile::cp_async_wait<0>();
    __syncthreads();  // tile n has landed, and every warp is done with tile n - 1's buffer
    if (n + 1 < tiles) load_key_tile_async(n + 1);
    tile::cp_async_commit();
    if (n == 0)
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) q_frag[kk] = mma::load_a<QTile>(sq, row0, kk);
    mma::zero(s);
    mma::gemm_abt<T, KvTile, kD / 16, kBlockN / 8>(
        s, [&](int kk) { return q_frag[kk]; }, k_tile(n), 0);
  }

  // Sets the scores of key tile n that the mask hides to `value`; only tiles that cross the
  // causal diagonal or the sequence's end hold any.
  __device__ __forceinline__ void mask(FragC (&s)[kBlockN / 8], int n, int row0, float value) const {
    const int k0 = n * kBlockN;
    if (k0 + kBlockN > keys || (dims.causal && k0 + kBlockN - 1 > prefix + q0))
      mask_accumulators(
          s, q0 + row0, k0, [&](int i, int j) { return visible(dims, seq.len, i, j); }, value);
  }

  // Writes the warp's accumulators (its 16 rows, scaled by factor) to `out` in 16-byte
  // stores, staged in the warp's own rows of the Q tile at `shared`, which no lane may still
  // be reading.
  template <int kN8>
  __device__ __forceinline__ void store_rows(unsigned char* shared, int row0, const FragC (&acc)[kN8],
                                             const float (&factor)[2], T* out) const {
    __syncwarp();  // every lane is past its ldmatrix reads of the rows the result is staged in
    tile::store_accumulators<QTile, T>(shared, row0, acc, factor);
    __syncwarp();
    tile::store_warp_rows<QTile, T>(shared, row0,
                                    [&](int r) -> T* { return q0 + r < seq.len ? row(out, r) : nullptr; });
  }
};

// Launches a query-tile kernel: a block per (query tile, head, sequence).
template <typename Shape, typename Kernel, typename... Args>
void launch_query_tiles(Kernel kernel, const AttentionDims& dims, cudaStream_t stream, Args... args) {
  allow_shared_bytes(kernel, Shape::kSharedBytes);
  const dim3 grid(tiles_of(dims.max_seqlen, Shape::kBlockM), dims.num_heads, dims.batch);
  kernel<<<grid, Shape::kThreads, Shape::kSharedBytes, stream>>>(dims, args...);
  ZT_CUDA_CHECK(cudaGetLastError());
}

inline bool flash_head_dim(int head_dim) { return head_dim == 64 || head_dim == 96 || head_dim == 128; }

// Calls f.template operator()<T, kHeadDim>() for a dtype and head_dim the kernels cover.
template <typename F>
void dispatch_flash(DType dtype, int head_dim, F&& f) {
  auto with_type = [&]<typename T>() {
    switch (head_dim) {
      case 64:
        return f.template operator()<T, 64>();
      case 96:
        return f.template operator()<T, 96>();
      case 128:
        return f.template operator()<T, 128>();
      default:
        throw Error("flash attention kernels: head_dim " + std::to_string(head_dim) +
                    " is not one of 64, 96, 128; use the simple kernels of cuda/attention/simple/attention.cuh");
    }
  };
  dispatch_float_type<GpuHalfTypes>(dtype, "flash attention kernels", with_type,
                                    "; use the simple kernels of cuda/attention/simple/attention.cuh");
}

}  // namespace zt::cuda::flash_detail
