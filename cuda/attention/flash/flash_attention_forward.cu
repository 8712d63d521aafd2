// Forward: one block per (query tile, head, sequence), 16 query rows per warp. The warp's Q
// rows stay in registers as A fragments; K and V tiles stream through shared memory (the next
// tile's copies in flight while the current one is used); S = Q·Kᵀ, an online softmax in fp32
// (running max m and sum l per row, exp2 with the scale folded into log2 e), then the
// probabilities, rounded to the input dtype, are the A operand of O += P·V. Only tiles that
// cross the causal diagonal or the sequence's end are masked; tiles past the diagonal are
// never loaded. Query tiles are launched last-first: under causal masking they have the most
// keys, so the long blocks start before the short ones.
#include "cuda/attention/flash/flash_attention.cuh"
#include "cuda/attention/flash/flash_attention_common.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

using namespace flash_detail;

template <int kD, int kWarps, int kBlockN>
struct ForwardShape {
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockM = 16 * kWarps;
  using QTile = tile::SmemTile<kBlockM, kD>;
  using KvTile = tile::SmemTile<kBlockN, kD>;
  // Q (reused to stage O), then K and V, each double-buffered.
  static constexpr int kSharedBytes = QTile::kBytes + 4 * KvTile::kBytes;
};

// Folds one tile of raw scores into the row statistics and rescales O; leaves the unnormalised
// probabilities exp(scale·s − m) in s. A row that has seen only masked keys keeps m = −inf and
// is computed against 0, which keeps everything finite.
template <int kN8, int kD8>
__device__ __forceinline__ void online_softmax(FragC (&s)[kN8], float (&m)[2], float (&l)[2], FragC (&o)[kD8],
                                               float scale_log2) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float row_max = m[half];
#pragma unroll
    for (int n = 0; n < kN8; ++n) row_max = fmaxf(row_max, fmaxf(s[n].x[2 * half], s[n].x[2 * half + 1]));
    row_max = mma::quad_max(row_max);
    const float reference = row_max == -INFINITY ? 0.0f : row_max * scale_log2;
    const float rescale = mma::exp2_approx(m[half] * scale_log2 - reference);
    m[half] = row_max;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < kN8; ++n)
#pragma unroll
      for (int e = 2 * half; e < 2 * half + 2; ++e) {
        s[n].x[e] = mma::exp2_approx(fmaf(s[n].x[e], scale_log2, -reference));
        sum += s[n].x[e];
      }
    l[half] = l[half] * rescale + sum;
#pragma unroll
    for (int d = 0; d < kD8; ++d) {
      o[d].x[2 * half] *= rescale;
      o[d].x[2 * half + 1] *= rescale;
    }
  }
}

template <typename T, int kD, int kWarps, int kBlockN>
__global__ void __launch_bounds__(32 * kWarps)
    flash_forward_kernel(AttentionDims dims, AttentionInputs in, T* out, float* lse) {
  using Shape = ForwardShape<kD, kWarps, kBlockN>;
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
  const std::uint32_t sq = mma::smem_address(shared), sk = sq + QTile::kBytes, sv = sk + 2 * KvTile::kBytes;
  auto load_kv = [&](int n) {
    const int k0 = n * kBlockN, valid = min(kBlockN, keys - k0);
    const std::uint32_t buffer = (n & 1) * KvTile::kBytes;
    tile::load_tile_async<KvTile, kThreads>(
        sk + buffer, valid, [&](int r) { return key_row(x.k, x.prefix_k, dims, seq, b, k0 + r, g); }, x.k);
    tile::load_tile_async<KvTile, kThreads>(
        sv + buffer, valid, [&](int r) { return key_row(x.v, x.prefix_v, dims, seq, b, k0 + r, g); }, x.v);
  };
  tile::load_tile_async<QTile, kThreads>(
      sq, min(kBlockM, seq.len - q0),
      [&](int r) { return token_row(x.q, seq.start + q0 + r, dims.num_heads, h, kD); }, x.q);
  load_kv(0);
  tile::cp_async_commit();

  const int row0 = (threadIdx.x / 32) * 16;
  const float scale_log2 = dims.softmax_scale * kLog2e;
  FragA q_frag[kD / 16];
  FragC o[kD / 8];
  mma::zero(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
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
    if (k0 + kBlockN > keys || (dims.causal && k0 + kBlockN - 1 > prefix + q0))
      mask_accumulators(
          s, q0 + row0, k0, [&](int i, int j) { return visible(dims, seq.len, i, j); }, -INFINITY);
    online_softmax(s, m, l, o, scale_log2);
    FragA p[kBlockN / 16];
    mma::to_a<T>(p, s);
    mma::gemm_ab<T, KvTile, kBlockN / 16, kD / 8>(o, [&](int kk) { return p[kk]; }, sv + buffer, 0, 0);
  }

  // Rows past the sequence end have l = 0; they are never stored.
  float inverse[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    l[half] = mma::quad_sum(l[half]);
    inverse[half] = 1.0f / l[half];
  }
  // The warp's own Q rows, no longer needed, stage O for 16-byte stores. The warp's lanes
  // read those rows with ldmatrix: they must all be past it before any lane overwrites them.
  __syncwarp();
  tile::store_accumulators<QTile, T>(shared, row0, o, inverse);
  __syncwarp();
  tile::store_warp_rows<QTile, T>(shared, row0, [&](int r) -> T* {
    return q0 + r < seq.len ? token_row(out, seq.start + q0 + r, dims.num_heads, h, kD) : nullptr;
  });
  const AccLane lane;
  if (lane.quad == 0)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = q0 + row0 + lane.group + 8 * half;
      if (i < seq.len) lse[(seq.start + i) * dims.num_heads + h] = m[half] * dims.softmax_scale + logf(l[half]);
    }
}

template <typename T, int kD>
void launch_forward(const AttentionDims& dims, const AttentionInputs& inputs, void* out, float* lse,
                    cudaStream_t stream) {
  constexpr int kWarps = 8, kBlockN = kD <= 64 ? 128 : 64;
  using Shape = ForwardShape<kD, kWarps, kBlockN>;
  auto kernel = flash_forward_kernel<T, kD, kWarps, kBlockN>;
  allow_shared_bytes(kernel, Shape::kSharedBytes);
  const dim3 grid(tiles_of(dims.max_seqlen, Shape::kBlockM), dims.num_heads, dims.batch);
  kernel<<<grid, Shape::kThreads, Shape::kSharedBytes, stream>>>(dims, inputs, static_cast<T*>(out), lse);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void flash_attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out,
                             float* lse, cudaStream_t stream) {
  attention_detail::check_dims(dims);
  ZT_REQUIRE(dims.softmax_scale > 0.0f, "flash attention forward: softmax_scale " +
                                            std::to_string(dims.softmax_scale) +
                                            " must be positive; the simple kernels take any finite scale");
  if (dims.max_seqlen == 0) return;
  dispatch_flash(dtype, dims.head_dim,
                 [&]<typename T, int kD>() { launch_forward<T, kD>(dims, inputs, out, lse, stream); });
}

}  // namespace zt::cuda
