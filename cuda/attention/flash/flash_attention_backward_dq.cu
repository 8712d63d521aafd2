// dQ for the deterministic backward: one block per (query tile, head, sequence), 16 query rows
// per warp, streaming the K/V tiles the tile's queries see as the forward does. It recomputes
// S = Q·Kᵀ and P = exp(scale·S − lse), dP = dO·Vᵀ, dS = P ∘ (dP − delta) and sums dQ += dS·K
// in key order in registers: every dQ element is owned by one lane, so runs are bitwise
// reproducible. Q stays in registers; dO is read from shared memory at each key tile.
#include "cuda/attention/flash/flash_attention_backward_dq.cuh"
#include "cuda/attention/flash/flash_attention_common.cuh"
#include "cuda/common/shared_memory_limit.h"
#include "runtime/check.h"

namespace zt::cuda::flash_detail {
namespace {

// Q (reused to stage dQ), dO, then K and V.
template <int kD, int kWarps, int kBlockN>
using DqShape = QueryTileShape<kD, kWarps, kBlockN, 2>;

template <typename T, int kD, int kWarps, int kBlockN>
__global__ void __launch_bounds__(32 * kWarps)
    flash_backward_dq_kernel(AttentionDims dims, AttentionInputs in, const T* grad_out, const float* lse,
                             const float* delta, T* grad_q) {
  using Shape = DqShape<kD, kWarps, kBlockN>;
  using QTile = typename Shape::QTile;
  using KvTile = typename Shape::KvTile;
  extern __shared__ __align__(128) unsigned char shared[];
  const std::uint32_t sq = mma::smem_address(shared), sdo = sq + QTile::kBytes, sk = sdo + QTile::kBytes;
  const std::uint32_t sv = sk + 2 * KvTile::kBytes;
  const QueryBlock<T, Shape> block(dims, in, sk, sv);
  if (block.empty()) return;
  block.load_rows_async(sq, block.x.q);
  block.load_rows_async(sdo, grad_out);
  block.load_key_tile_async(0);
  tile::cp_async_commit();

  const int row0 = (threadIdx.x / 32) * 16;
  const float scale_log2 = dims.softmax_scale * kLog2e;
  const AccLane lane;
  float row_lse[2], row_delta[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int i = block.q0 + row0 + lane.row(2 * half);
    const std::int64_t index = (block.seq.start + i) * dims.num_heads + block.h;
    row_lse[half] = i < block.seq.len ? lse[index] * kLog2e : 0.0f;
    row_delta[half] = i < block.seq.len ? delta[index] : 0.0f;
  }
  FragA q_frag[kD / 16];
  FragC dq[kD / 8];
  mma::zero(dq);
  for (int n = 0; n < block.tiles; ++n) {
    FragC s[kBlockN / 8];
    block.scores(s, q_frag, n, sq, row0);
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nb].x[e] = mma::exp2_approx(fmaf(s[nb].x[e], scale_log2, -row_lse[e / 2]));
    block.mask(s, n, row0, 0.0f);
    FragC dp[kBlockN / 8];
    mma::zero(dp);
    mma::gemm_abt<T, KvTile, kD / 16, kBlockN / 8>(
        dp, [&](int kk) { return mma::load_a<QTile>(sdo, row0, kk); }, block.v_tile(n), 0);
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[nb].x[e] = s[nb].x[e] * (dp[nb].x[e] - row_delta[e / 2]);
    FragA ds[kBlockN / 16];
    mma::to_a<T>(ds, dp);
    mma::gemm_ab<T, KvTile, kBlockN / 16, kD / 8>(
        dq, [&](int kk) { return ds[kk]; }, block.k_tile(n), 0, 0);
  }

  const float factor[2] = {dims.softmax_scale, dims.softmax_scale};
  block.store_rows(shared, row0, dq, factor, grad_q);
}

template <typename T, int kD, int kBlockN>
void launch_tiles(const AttentionDims& dims, const AttentionInputs& inputs, const void* grad_out, const float* lse,
                  const float* delta, void* grad_q, cudaStream_t stream) {
  constexpr int kWarps = 8;
  launch_query_tiles<DqShape<kD, kWarps, kBlockN>>(flash_backward_dq_kernel<T, kD, kWarps, kBlockN>, dims, stream,
                                                   inputs, static_cast<const T*>(grad_out), lse, delta,
                                                   static_cast<T*>(grad_q));
}

// Key tiles of 64 where they fit the device's shared memory per block; else of 32, which fit
// the 99 KiB of sm_86/89 (64-key tiles need 104 KiB at head_dim 96, 128 KiB at 128).
template <typename T, int kD>
void launch(const AttentionDims& dims, const AttentionInputs& inputs, const void* grad_out, const float* lse,
            const float* delta, void* grad_q, cudaStream_t stream) {
  constexpr std::size_t kWideBytes = DqShape<kD, 8, 64>::kSharedBytes;
  static_assert(DqShape<kD, 8, 32>::kSharedBytes <= kSmallestBlockSharedMemory);
  if constexpr (kWideBytes <= kSmallestBlockSharedMemory) {
    launch_tiles<T, kD, 64>(dims, inputs, grad_out, lse, delta, grad_q, stream);
  } else {
    if (kWideBytes <= block_shared_memory_limit())
      launch_tiles<T, kD, 64>(dims, inputs, grad_out, lse, delta, grad_q, stream);
    else
      launch_tiles<T, kD, 32>(dims, inputs, grad_out, lse, delta, grad_q, stream);
  }
}

}  // namespace

void launch_flash_dq(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* grad_out,
                     const float* lse, const float* delta, void* grad_q, cudaStream_t stream) {
  if (dims.max_seqlen == 0) return;
  dispatch_flash(dtype, dims.head_dim,
                 [&]<typename T, int kD>() { launch<T, kD>(dims, inputs, grad_out, lse, delta, grad_q, stream); });
}

}  // namespace zt::cuda::flash_detail
