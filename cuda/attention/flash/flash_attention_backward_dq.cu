// dQ for the deterministic backward: one block per (query tile, head, sequence), 16 query rows
// per warp, streaming the K/V tiles the tile's queries see as the forward does. It recomputes
// S = Q·Kᵀ and P = exp(scale·S − lse), dP = dO·Vᵀ, dS = P ∘ (dP − delta) and sums dQ += dS·K
// in key order in registers: every dQ element is owned by one lane, so runs are bitwise
// reproducible. Q stays in registers; dO is read from shared memory at each key tile.
#include "cuda/attention/flash/flash_attention_backward_dq.cuh"
#include "cuda/attention/flash/flash_attention_common.cuh"
#include "runtime/check.h"

namespace zt::cuda::flash_detail {
namespace {

template <int kD, int kWarps, int kBlockN>
struct DqShape {
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockM = 16 * kWarps;
  using QTile = tile::SmemTile<kBlockM, kD>;
  using KvTile = tile::SmemTile<kBlockN, kD>;
  // Q (reused to stage dQ), dO, then K and V double-buffered.
  static constexpr int kSharedBytes = 2 * QTile::kBytes + 4 * KvTile::kBytes;
};

template <typename T, int kD, int kWarps, int kBlockN>
__global__ void __launch_bounds__(32 * kWarps)
    flash_backward_dq_kernel(AttentionDims dims, AttentionInputs in, const T* grad_out, const float* lse,
                             const float* delta, T* grad_q) {
  using Shape = DqShape<kD, kWarps, kBlockN>;
  using QTile = typename Shape::QTile;
  using KvTile = typename Shape::KvTile;
  constexpr int kBlockM = Shape::kBlockM, kThreads = Shape::kThreads;
  const int h = blockIdx.y, b = blockIdx.z;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kBlockM;
  const Sequence seq = sequence(in.cu_seqlens, b);
  if (q0 >= seq.len) return;
  const int prefix = dims.prefix_len, keys = prefix + seq.len;
  const int g = h / (dims.num_heads / dims.num_kv_heads);
  const int key_end = dims.causal ? prefix + min(seq.len, q0 + kBlockM) : keys;
  const int tiles = tiles_of(key_end, kBlockN);
  const Operands<T> x(in);

  extern __shared__ __align__(128) unsigned char shared[];
  const std::uint32_t sq = mma::smem_address(shared), sdo = sq + QTile::kBytes, sk = sdo + QTile::kBytes;
  const std::uint32_t sv = sk + 2 * KvTile::kBytes;
  auto load_kv = [&](int n) {
    const int k0 = n * kBlockN, valid = min(kBlockN, keys - k0);
    const std::uint32_t buffer = (n & 1) * KvTile::kBytes;
    tile::load_tile_async<KvTile, kThreads>(
        sk + buffer, valid, [&](int r) { return key_row(x.k, x.prefix_k, dims, seq, b, k0 + r, g); }, x.k);
    tile::load_tile_async<KvTile, kThreads>(
        sv + buffer, valid, [&](int r) { return key_row(x.v, x.prefix_v, dims, seq, b, k0 + r, g); }, x.v);
  };
  const int valid_queries = min(kBlockM, seq.len - q0);
  tile::load_tile_async<QTile, kThreads>(
      sq, valid_queries, [&](int r) { return token_row(x.q, seq.start + q0 + r, dims.num_heads, h, kD); }, x.q);
  tile::load_tile_async<QTile, kThreads>(
      sdo, valid_queries, [&](int r) { return token_row(grad_out, seq.start + q0 + r, dims.num_heads, h, kD); },
      grad_out);
  load_kv(0);
  tile::cp_async_commit();

  const int row0 = (threadIdx.x / 32) * 16;
  const float scale_log2 = dims.softmax_scale * kLog2e;
  const AccLane lane;
  float row_lse[2], row_delta[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int i = q0 + row0 + lane.row(2 * half);
    const std::int64_t index = (seq.start + i) * dims.num_heads + h;
    row_lse[half] = i < seq.len ? lse[index] * kLog2e : 0.0f;
    row_delta[half] = i < seq.len ? delta[index] : 0.0f;
  }
  FragA q_frag[kD / 16];
  FragC dq[kD / 8];
  mma::zero(dq);
  for (int n = 0; n < tiles; ++n) {
    tile::cp_async_wait<0>();
    __syncthreads();  // tile n has landed, and every warp is done with tile n - 1's buffer
    if (n + 1 < tiles) load_kv(n + 1);
    tile::cp_async_commit();
    if (n == 0)
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) q_frag[kk] = mma::load_a<QTile>(sq, row0, kk);
    const std::uint32_t buffer = (n & 1) * KvTile::kBytes;
    const int k0 = n * kBlockN;
    FragC s[kBlockN / 8];
    mma::zero(s);
    mma::gemm_abt<T, KvTile, kD / 16, kBlockN / 8>(s, [&](int kk) { return q_frag[kk]; }, sk + buffer, 0);
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nb].x[e] = mma::exp2_approx(fmaf(s[nb].x[e], scale_log2, -row_lse[e / 2]));
    if (k0 + kBlockN > keys || (dims.causal && k0 + kBlockN - 1 > prefix + q0))
      mask_accumulators(
          s, q0 + row0, k0, [&](int i, int j) { return visible(dims, seq.len, i, j); }, 0.0f);
    FragC dp[kBlockN / 8];
    mma::zero(dp);
    mma::gemm_abt<T, KvTile, kD / 16, kBlockN / 8>(
        dp, [&](int kk) { return mma::load_a<QTile>(sdo, row0, kk); }, sv + buffer, 0);
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[nb].x[e] = s[nb].x[e] * (dp[nb].x[e] - row_delta[e / 2]);
    FragA ds[kBlockN / 16];
    mma::to_a<T>(ds, dp);
    mma::gemm_ab<T, KvTile, kBlockN / 16, kD / 8>(dq, [&](int kk) { return ds[kk]; }, sk + buffer, 0, 0);
  }

  // The warp's own Q rows, no longer needed, stage dQ for 16-byte stores.
  const float factor[2] = {dims.softmax_scale, dims.softmax_scale};
  __syncwarp();  // every lane is past its ldmatrix reads of the rows dQ is staged in
  tile::store_accumulators<QTile, T>(shared, row0, dq, factor);
  __syncwarp();
  tile::store_warp_rows<QTile, T>(shared, row0, [&](int r) -> T* {
    return q0 + r < seq.len ? token_row(grad_q, seq.start + q0 + r, dims.num_heads, h, kD) : nullptr;
  });
}

template <typename T, int kD>
void launch(const AttentionDims& dims, const AttentionInputs& inputs, const void* grad_out, const float* lse,
            const float* delta, void* grad_q, cudaStream_t stream) {
  constexpr int kWarps = 8, kBlockN = 64;
  using Shape = DqShape<kD, kWarps, kBlockN>;
  auto kernel = flash_backward_dq_kernel<T, kD, kWarps, kBlockN>;
  allow_shared_bytes(kernel, Shape::kSharedBytes);
  const dim3 grid(tiles_of(dims.max_seqlen, Shape::kBlockM), dims.num_heads, dims.batch);
  kernel<<<grid, Shape::kThreads, Shape::kSharedBytes, stream>>>(dims, inputs, static_cast<const T*>(grad_out), lse,
                                                                 delta, static_cast<T*>(grad_q));
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_flash_dq(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* grad_out,
                     const float* lse, const float* delta, void* grad_q, cudaStream_t stream) {
  if (dims.max_seqlen == 0) return;
  dispatch_flash(dtype, dims.head_dim, [&]<typename T, int kD>() {
    launch<T, kD>(dims, inputs, grad_out, lse, delta, grad_q, stream);
  });
}

}  // namespace zt::cuda::flash_detail
