// Forward: one block per (query tile, head, sequence), 16 query rows per warp. The warp's Q
// rows stay in registers as A fragments; K and V tiles stream through shared memory (the next
// tile's copies in flight while the current one is used); S = Q·Kᵀ, an online softmax in fp32
// (running max m and sum l per row, exp2 with the scale folded into log2 e), then the
// probabilities, rounded to the input dtype, are the A operand of O += P·V. Only tiles that
// cross the causal diagonal or the sequence's end are masked; tiles past the diagonal are
// never loaded (see QueryBlock in flash_attention_common.cuh for the block's mapping).
#include "cuda/attention/flash/flash_attention.cuh"
#include "cuda/attention/flash/flash_attention_common.cuh"
#include "cuda/common/shared_memory_limit.h"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

using namespace flash_detail;

// Q (reused to stage O), then K and V.
template <int kD, int kWarps, int kBlockN>
using ForwardShape = QueryTileShape<kD, kWarps, kBlockN, 1>;

template <typename T, int kD, int kWarps, int kBlockN>
__global__ void __launch_bounds__(32 * kWarps)
    flash_forward_kernel(AttentionDims dims, AttentionInputs in, T* out, float* lse) {
  using Shape = ForwardShape<kD, kWarps, kBlockN>;
  using QTile = typename Shape::QTile;
  using KvTile = typename Shape::KvTile;
  extern __shared__ __align__(128) unsigned char shared[];
  const std::uint32_t sq = mma::smem_address(shared), sk = sq + QTile::kBytes, sv = sk + 2 * KvTile::kBytes;
  const QueryBlock<T, Shape> block(dims, in, sk, sv);
  if (block.empty()) return;
  block.load_rows_async(sq, block.x.q);
  block.load_key_tile_async(0);
  tile::cp_async_commit();

  const int row0 = (threadIdx.x / 32) * 16;
  const float scale_log2 = dims.softmax_scale * kLog2e;
  FragA q_frag[kD / 16];
  FragC o[kD / 8];
  mma::zero(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  for (int n = 0; n < block.tiles; ++n) {
    FragC s[kBlockN / 8];
    block.scores(s, q_frag, n, sq, row0);
    block.mask(s, n, row0, -INFINITY);
    float rescale[2];
    online_softmax(s, m, l, rescale, scale_log2);
    rescale_rows(o, rescale);
    FragA p[kBlockN / 16];
    mma::to_a<T>(p, s);
    mma::gemm_ab<T, KvTile, kBlockN / 16, kD / 8>(
        o, [&](int kk) { return p[kk]; }, block.v_tile(n), 0, 0);
  }

  // Rows past the sequence end have l = 0; they are never stored.
  float inverse[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    l[half] = quad_sum(l[half]);
    inverse[half] = 1.0f / l[half];
  }
  block.store_rows(shared, row0, o, inverse, out);
  const AccLane lane;
  if (lane.quad == 0)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = block.q0 + row0 + lane.group + 8 * half;
      if (i < block.seq.len)
        lse[(block.seq.start + i) * dims.num_heads + block.h] = m[half] * dims.softmax_scale + logf(l[half]);
    }
}

template <typename T, int kD>
void launch_forward(const AttentionDims& dims, const AttentionInputs& inputs, void* out, float* lse,
                    cudaStream_t stream) {
  constexpr int kWarps = 8, kBlockN = kD <= 64 ? 128 : 64;
  static_assert(ForwardShape<kD, kWarps, kBlockN>::kSharedBytes <= kSmallestBlockSharedMemory,
                "the forward's tiles must fit every supported GPU (96 KiB at head_dim 128)");
  launch_query_tiles<ForwardShape<kD, kWarps, kBlockN>>(flash_forward_kernel<T, kD, kWarps, kBlockN>, dims, stream,
                                                        inputs, static_cast<T*>(out), lse);
}

}  // namespace

void flash_attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out,
                             float* lse, cudaStream_t stream) {
  attention_detail::check_dims(dims);
  ZT_REQUIRE(dims.softmax_scale > 0.0f, "flash attention forward: softmax_scale " + std::to_string(dims.softmax_scale) +
                                            " must be positive; the simple kernels take any finite scale");
  if (dims.max_seqlen == 0) return;
  dispatch_flash(dtype, dims.head_dim,
                 [&]<typename T, int kD>() { launch_forward<T, kD>(dims, inputs, out, lse, stream); });
}

}  // namespace zt::cuda
