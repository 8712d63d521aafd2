// Backward (FlashAttention-2):
//   delta[t, h] = rowsum(dO ∘ O) in fp32                       one warp per (token, head)
//   dK, dV      one block per (key tile, kv head, sequence), 16 keys per warp, looping over
//               the query tiles of every head of the group (Q, dO, lse and delta double-
//               buffered): Sᵀ = K·Qᵀ, Pᵀ = exp(scale·Sᵀ − lse), dV += Pᵀ·dO, dPᵀ = V·dOᵀ,
//               dSᵀ = Pᵀ ∘ (dPᵀ − delta), dK += dSᵀ·Q. The group's heads and the prefix keys
//               are summed inside the block, so no kv gradient is shared between blocks.
//   dQ          either those blocks put dSᵀ in shared memory and atomically add dS·K into an
//               fp32 buffer, converted at the end, or (deterministic) a second kernel owns each
//               query tile and sums over key tiles in order (flash_attention_backward_dq.cu).
#include "cuda/attention/flash/flash_attention.cuh"
#include "cuda/attention/flash/flash_attention_backward_dq.cuh"
#include "cuda/attention/flash/flash_attention_common.cuh"
#include "cuda/common/shared_memory_limit.h"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

using namespace flash_detail;

template <typename T, int kD>
__global__ void __launch_bounds__(128)
    flash_delta_kernel(const T* out, const T* grad_out, float* delta, std::int64_t rows) {
  constexpr int kWarps = 4;
  const int lane = threadIdx.x % 32;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; row < rows;
       row += static_cast<std::int64_t>(gridDim.x) * kWarps) {
    const float sum = row_dot<T, kD>(out + row * kD, grad_out + row * kD, lane);
    if (lane == 0) delta[row] = sum;
  }
}

template <typename T>
__global__ void __launch_bounds__(256)
    flash_dq_convert_kernel(const float* dq_accum, T* grad_q, std::int64_t quads, float scale) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < quads;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float4 a = reinterpret_cast<const float4*>(dq_accum)[i];
    const uint2 packed{mma::pack<T>(a.x * scale, a.y * scale), mma::pack<T>(a.z * scale, a.w * scale)};
    reinterpret_cast<uint2*>(grad_q)[i] = packed;
  }
}

template <int kD, int kWarps, int kBlockM, bool kAtomicDq>
struct KvShape {
  static constexpr int kBlockN = 16 * kWarps;
  using KvTile = tile::SmemTile<kBlockN, kD>;
  using QTile = tile::SmemTile<kBlockM, kD>;
  using DsTile = tile::SmemTile<kBlockN, kBlockM>;
  // One stage of the query stream: Q, dO, then lse and delta as floats.
  static constexpr int kStageBytes = 2 * QTile::kBytes + 2 * kBlockM * 4;
  // K, V, two stages, and dSᵀ when dQ is accumulated here.
  static constexpr int kSharedBytes = 2 * KvTile::kBytes + 2 * kStageBytes + (kAtomicDq ? DsTile::kBytes : 0);
  // dQ = dS·K (kBlockM x kD) is split over the warps: kDqWarpsM row blocks of 16, each
  // row block's columns shared by kWarps / kDqWarpsM warps.
  static constexpr int kDqWarpsM = kBlockM / 16;
  static constexpr int kDqCols = kD / (kWarps / kDqWarpsM);
  static_assert(kWarps % kDqWarpsM == 0 && kDqCols % 16 == 0, "dQ product must split evenly over the warps");
};

// Adds this block's dQ = dS·K for query rows i0 .. i0 + kBlockM of head h into dq_accum.
template <typename T, typename Shape, int kD>
__device__ __forceinline__ void add_dq(float* dq_accum, std::uint32_t sds, std::uint32_t sk, const AttentionDims& dims,
                                       Sequence seq, int h, int i0) {
  using DsTile = typename Shape::DsTile;
  using KvTile = typename Shape::KvTile;
  const int warp = threadIdx.x / 32, m0 = (warp % Shape::kDqWarpsM) * 16;
  const int c0 = (warp / Shape::kDqWarpsM) * Shape::kDqCols;
  FragC dq[Shape::kDqCols / 8];
  mma::zero(dq);
  mma::gemm_ab<T, KvTile, Shape::kBlockN / 16, Shape::kDqCols / 8>(
      dq, [&](int kk) { return mma::load_a_trans<DsTile>(sds, m0, kk); }, sk, 0, c0);
  const AccLane lane;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int i = i0 + m0 + lane.row(2 * half);
    if (i >= seq.len) continue;
    float* row = dq_accum + ((seq.start + i) * dims.num_heads + h) * kD + c0;
#pragma unroll
    for (int n = 0; n < Shape::kDqCols / 8; ++n) {
      float* dst = row + lane.col(n, 0);
#if __CUDA_ARCH__ >= 900
      atomicAdd(reinterpret_cast<float2*>(dst), make_float2(dq[n].x[2 * half], dq[n].x[2 * half + 1]));
#else
      atomicAdd(dst, dq[n].x[2 * half]);
      atomicAdd(dst + 1, dq[n].x[2 * half + 1]);
#endif
    }
  }
}

template <typename T, int kD, int kWarps, int kBlockM, bool kAtomicDq>
__global__ void __launch_bounds__(32 * kWarps)
    flash_backward_kv_kernel(AttentionDims dims, AttentionInputs in, const T* grad_out, const float* lse,
                             const float* delta, AttentionGradOutputs grads, float* dq_accum) {
  using Shape = KvShape<kD, kWarps, kBlockM, kAtomicDq>;
  using KvTile = typename Shape::KvTile;
  using QTile = typename Shape::QTile;
  constexpr int kBlockN = Shape::kBlockN, kThreads = 32 * kWarps;
  const int g = blockIdx.y, b = blockIdx.z, k0 = blockIdx.x * kBlockN;
  const Sequence seq = sequence(in.cu_seqlens, b);
  const int prefix = dims.prefix_len, keys = prefix + seq.len;
  if (k0 >= keys) return;
  const int group = dims.num_heads / dims.num_kv_heads;
  // Causal query tiles wholly before this tile's first own key see none of its keys.
  const int first_m = dims.causal && k0 > prefix ? (k0 - prefix) / kBlockM : 0;
  const int m_tiles = tiles_of(seq.len, kBlockM) - first_m;
  const int steps = group * m_tiles;
  const Operands<T> x(in);

  extern __shared__ __align__(128) unsigned char shared[];
  const std::uint32_t sk = mma::smem_address(shared), sv = sk + KvTile::kBytes;
  const std::uint32_t stages = sv + KvTile::kBytes, sds = stages + 2 * Shape::kStageBytes;
  auto head_of = [&](int step) { return g * group + step / m_tiles; };
  auto first_query = [&](int step) { return (first_m + step % m_tiles) * kBlockM; };
  auto load_stage = [&](int step) {
    const int h = head_of(step), i0 = first_query(step), valid = min(kBlockM, seq.len - i0);
    const std::uint32_t sq = stages + (step & 1) * Shape::kStageBytes, sdo = sq + QTile::kBytes;
    const std::uint32_t stats = sdo + QTile::kBytes;
    auto row_of = [&](const T* base) {
      return [=, &dims, &seq](int r) { return token_row(base, seq.start + i0 + r, dims.num_heads, h, kD); };
    };
    tile::load_tile_async<QTile, kThreads>(sq, valid, row_of(x.q), x.q);
    tile::load_tile_async<QTile, kThreads>(sdo, valid, row_of(grad_out), grad_out);
    for (int r = threadIdx.x; r < kBlockM; r += kThreads) {
      const bool ok = r < valid;
      const std::int64_t index = ok ? (seq.start + i0 + r) * dims.num_heads + h : 0;
      tile::cp_async<4>(stats + 4 * r, lse + index, ok);
      tile::cp_async<4>(stats + 4 * (kBlockM + r), delta + index, ok);
    }
  };
  const int valid_keys = min(kBlockN, keys - k0);
  tile::load_tile_async<KvTile, kThreads>(
      sk, valid_keys, [&](int r) { return key_row(x.k, x.prefix_k, dims, seq, b, k0 + r, g); }, x.k);
  tile::load_tile_async<KvTile, kThreads>(
      sv, valid_keys, [&](int r) { return key_row(x.v, x.prefix_v, dims, seq, b, k0 + r, g); }, x.v);
  if (steps > 0) load_stage(0);
  tile::cp_async_commit();

  const int row0 = (threadIdx.x / 32) * 16;
  const float scale_log2 = dims.softmax_scale * kLog2e;
  const AccLane lane;
  FragC dk[kD / 8], dv[kD / 8];
  mma::zero(dk);
  mma::zero(dv);
  for (int step = 0; step < steps; ++step) {
    tile::cp_async_wait<0>();
    __syncthreads();  // this stage has landed, and every warp is done with the other one
    if (step + 1 < steps) load_stage(step + 1);
    tile::cp_async_commit();
    const int h = head_of(step), i0 = first_query(step);
    const std::uint32_t sq = stages + (step & 1) * Shape::kStageBytes, sdo = sq + QTile::kBytes;
    const float* s_lse = reinterpret_cast<const float*>(shared + (sdo + QTile::kBytes - sk));
    const float* s_delta = s_lse + kBlockM;

    FragC s[kBlockM / 8];
    mma::zero(s);
    mma::gemm_abt<T, KvTile, kD / 16, kBlockM / 8>(
        s, [&](int kk) { return mma::load_a<KvTile>(sk, row0, kk); }, sq, 0);
#pragma unroll
    for (int n = 0; n < kBlockM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[n].x[e] = mma::exp2_approx(fmaf(s[n].x[e], scale_log2, -s_lse[lane.col(n, e)] * kLog2e));
    if (i0 + kBlockM > seq.len || k0 + kBlockN > keys || (dims.causal && k0 + kBlockN - 1 > prefix + i0))
      mask_accumulators(
          s, k0 + row0, i0, [&](int j, int i) { return visible(dims, seq.len, i, j); }, 0.0f);
    FragC dp[kBlockM / 8];
    mma::zero(dp);
    mma::gemm_abt<T, KvTile, kD / 16, kBlockM / 8>(
        dp, [&](int kk) { return mma::load_a<KvTile>(sv, row0, kk); }, sdo, 0);
#pragma unroll
    for (int n = 0; n < kBlockM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[n].x[e] = s[n].x[e] * (dp[n].x[e] - s_delta[lane.col(n, e)]);
    FragA a[kBlockM / 16];
    mma::to_a<T>(a, s);
    mma::gemm_ab<T, QTile, kBlockM / 16, kD / 8>(
        dv, [&](int kk) { return a[kk]; }, sdo, 0, 0);
    mma::to_a<T>(a, dp);
    mma::gemm_ab<T, QTile, kBlockM / 16, kD / 8>(
        dk, [&](int kk) { return a[kk]; }, sq, 0, 0);
    if constexpr (kAtomicDq) {
      const float one[2] = {1.0f, 1.0f};
      tile::store_accumulators<typename Shape::DsTile, T>(shared + (sds - sk), row0, dp, one);
      __syncthreads();  // all of dSᵀ is written
      add_dq<T, Shape, kD>(dq_accum, sds, sk, dims, seq, h, i0);
    }
  }

  tile::cp_async_wait<0>();  // with no query to loop over, K and V may still be landing
  __syncthreads();           // every warp is done reading K and V: their rows now stage dK and dV
  const float dk_factor[2] = {dims.softmax_scale, dims.softmax_scale}, dv_factor[2] = {1.0f, 1.0f};
  tile::store_accumulators<KvTile, T>(shared, row0, dk, dk_factor);
  tile::store_accumulators<KvTile, T>(shared + KvTile::kBytes, row0, dv, dv_factor);
  __syncwarp();
  auto gradient_rows = [&](void* own, void* prefix_rows) {
    return [=, &dims, &seq](int r) -> T* {
      return k0 + r < keys ? key_row(static_cast<T*>(own), static_cast<T*>(prefix_rows), dims, seq, b, k0 + r, g)
                           : nullptr;
    };
  };
  tile::store_warp_rows<KvTile, T>(shared, row0, gradient_rows(grads.grad_k, grads.grad_prefix_k));
  tile::store_warp_rows<KvTile, T>(shared + KvTile::kBytes, row0, gradient_rows(grads.grad_v, grads.grad_prefix_v));
}

template <typename T, int kD>
void launch_delta(const AttentionDims& dims, const void* out, const void* grad_out, float* delta, cudaStream_t stream) {
  const std::int64_t rows = dims.total_tokens * dims.num_heads;
  if (rows == 0) return;
  flash_delta_kernel<T, kD><<<grid_size(rows, 4), 128, 0, stream>>>(static_cast<const T*>(out),
                                                                    static_cast<const T*>(grad_out), delta, rows);
  ZT_CUDA_CHECK(cudaGetLastError());
}

template <typename T, int kD, int kWarps, int kBlockM, bool kAtomicDq>
void launch_key_value_tiles(const AttentionDims& dims, const AttentionInputs& inputs, const void* grad_out,
                            const float* lse, const FlashBackwardScratch& scratch, const AttentionGradOutputs& grads,
                            cudaStream_t stream) {
  using Shape = KvShape<kD, kWarps, kBlockM, kAtomicDq>;
  auto kernel = flash_backward_kv_kernel<T, kD, kWarps, kBlockM, kAtomicDq>;
  allow_shared_bytes(kernel, Shape::kSharedBytes);
  const dim3 grid(tiles_of(dims.prefix_len + dims.max_seqlen, Shape::kBlockN), dims.num_kv_heads, dims.batch);
  kernel<<<grid, 32 * kWarps, Shape::kSharedBytes, stream>>>(dims, inputs, static_cast<const T*>(grad_out), lse,
                                                             scratch.delta, grads, scratch.dq_accum);
  ZT_CUDA_CHECK(cudaGetLastError());
}

// 8 warps (128 keys a block) where their tiles fit the device's shared memory per block; else
// 4 warps (64 keys), which fit the 99 KiB of sm_86/89. In 8 warps head_dim 96 needs 105 KiB
// (121 KiB with the atomic dQ's dSᵀ tile) and head_dim 128 106.5 KiB with it; in 4, at most 87.
template <typename T, int kD, bool kAtomicDq>
void launch_key_value(const AttentionDims& dims, const AttentionInputs& inputs, const void* grad_out, const float* lse,
                      const FlashBackwardScratch& scratch, const AttentionGradOutputs& grads, cudaStream_t stream) {
  // Sᵀ and dPᵀ of 64 queries next to dK and dV of 128 columns would not fit in registers.
  constexpr int kBlockM = kD >= 128 ? 32 : 64;
  constexpr std::size_t kWideBytes = KvShape<kD, 8, kBlockM, kAtomicDq>::kSharedBytes;
  static_assert(KvShape<kD, 4, kBlockM, kAtomicDq>::kSharedBytes <= kSmallestBlockSharedMemory);
  if constexpr (kWideBytes <= kSmallestBlockSharedMemory) {
    launch_key_value_tiles<T, kD, 8, kBlockM, kAtomicDq>(dims, inputs, grad_out, lse, scratch, grads, stream);
  } else {
    if (kWideBytes <= block_shared_memory_limit())
      launch_key_value_tiles<T, kD, 8, kBlockM, kAtomicDq>(dims, inputs, grad_out, lse, scratch, grads, stream);
    else
      launch_key_value_tiles<T, kD, 4, kBlockM, kAtomicDq>(dims, inputs, grad_out, lse, scratch, grads, stream);
  }
}

}  // namespace

void flash_detail::convert_dq_accum(const AttentionDims& dims, DType dtype, const float* dq_accum, void* grad_q,
                                    cudaStream_t stream) {
  const std::int64_t quads = dims.total_tokens * dims.num_heads * dims.head_dim / 4;
  if (quads == 0) return;
  dispatch_flash(dtype, dims.head_dim, [&]<typename T, int kD>() {
    flash_dq_convert_kernel<T>
        <<<grid_size(quads, 256), 256, 0, stream>>>(dq_accum, static_cast<T*>(grad_q), quads, dims.softmax_scale);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void flash_attention_backward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* out,
                              const void* grad_out, const float* lse, const FlashBackwardScratch& scratch,
                              const AttentionGradOutputs& grads, bool deterministic, cudaStream_t stream) {
  attention_detail::check_dims(dims);
  ZT_REQUIRE(dims.softmax_scale > 0.0f, "flash attention backward: softmax_scale " +
                                            std::to_string(dims.softmax_scale) +
                                            " must be positive; the simple kernels take any finite scale");
  ZT_REQUIRE(scratch.delta != nullptr && (deterministic || scratch.dq_accum != nullptr),
             "flash attention backward: scratch.delta (and scratch.dq_accum unless deterministic) must be given");
  dispatch_flash(dtype, dims.head_dim, [&]<typename T, int kD>() {
    launch_delta<T, kD>(dims, out, grad_out, scratch.delta, stream);
    const std::size_t dq_bytes = sizeof(float) * dims.total_tokens * dims.num_heads * kD;
    if (!deterministic && dq_bytes > 0) ZT_CUDA_CHECK(cudaMemsetAsync(scratch.dq_accum, 0, dq_bytes, stream));
    if (dims.prefix_len + dims.max_seqlen > 0) {
      if (deterministic)
        launch_key_value<T, kD, false>(dims, inputs, grad_out, lse, scratch, grads, stream);
      else
        launch_key_value<T, kD, true>(dims, inputs, grad_out, lse, scratch, grads, stream);
    }
    if (dims.max_seqlen == 0) return;
    if (deterministic)
      flash_detail::launch_flash_dq(dims, inputs, dtype, grad_out, lse, scratch.delta, grads.grad_q, stream);
    else
      convert_dq_accum(dims, dtype, scratch.dq_accum, grads.grad_q, stream);
  });
}

}  // namespace zt::cuda
