// The Hopper forward: one block per (query tile of 128 rows, head, sequence), 3 warpgroups.
// Warpgroup 0 gives up most of its registers and one thread issues every TMA copy: the Q tile
// once, then K and V tiles into rings of 2 stages, each stage guarded by a "full" barrier (bytes
// landed) and an "empty" barrier (all 8 consumer warps done reading). Warpgroups 1 and 2 take
// the registers and own 64 query rows each. Per key tile t a consumer issues S_t = Q·K_tᵀ, then
// O += P_{t−1}·V_{t−1}, and while both run on the tensor cores it waits only for S_t, masks
// it and folds it into the online softmax (flash_attention_common.cuh); after P·V lands it
// rescales O and packs P_t, rounded to the input dtype, as the next A operand in registers.
// The two consumers take turns issuing (ping-pong), so their softmaxes interleave with each
// other's products on the tensor cores.
#include "cuda/attention/hopper/hopper_attention.cuh"
#include "cuda/attention/hopper/hopper_forward_block.cuh"
#include "cuda/attention/hopper/hopper_tensor_maps.h"
#include "runtime/check.h"

namespace zt::cuda::hopper_detail {

using flash_detail::kLog2e;
using mma::FragA;
using mma::FragC;

template <typename T, int kD>
__global__ void __launch_bounds__(ForwardShape<kD>::kThreads, 1)
    hopper_forward_kernel(const __grid_constant__ ForwardMaps maps, AttentionDims dims, const std::int32_t* cu_seqlens,
                          T* out, float* lse) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = ForwardShape<kD>;
  constexpr int kBlockN = Shape::kBlockN, kStages = Shape::kStages, kN8 = kBlockN / 8, kD8 = kD / 8;
  extern __shared__ unsigned char shared[];
  const SharedPlan<Shape> smem(shared);
  const ForwardBlock<Shape> block(dims, cu_seqlens);
  if (block.empty()) return;
  if (threadIdx.x == 0) {
    hopper::barrier_init(smem.q_full(), 1);
    for (int s = 0; s < kStages; ++s) {
      hopper::barrier_init(smem.k_full(s), 1);
      hopper::barrier_init(smem.v_full(s), 1);
      hopper::barrier_init(smem.k_empty(s), Shape::kConsumerWarps);
      hopper::barrier_init(smem.v_empty(s), Shape::kConsumerWarps);
    }
    hopper::barrier_init_fence();
  }
  __syncthreads();

  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    hopper::release_registers<24>();
    if (threadIdx.x != 0) return;
    block.load_queries(maps, smem.q(), smem.q_full());
    for (int t = 0; t < block.tiles; ++t) {
      const int stage = t % kStages, parity = ((t / kStages) & 1) ^ 1;
      hopper::wait(smem.k_empty(stage), parity);
      block.load_key_tile(maps, true, t, smem.k(stage), smem.k_full(stage));
      hopper::wait(smem.v_empty(stage), parity);
      block.load_key_tile(maps, false, t, smem.v(stage), smem.v_full(stage));
    }
    return;
  }

  hopper::claim_registers<240>();
  const int consumer = warpgroup - 1;
  const int warpgroup_row0 = 64 * consumer, row0 = warpgroup_row0 + 16 * ((threadIdx.x / 32) % 4);
  const bool warp_leader = threadIdx.x % 32 == 0;
  const float scale_log2 = dims.softmax_scale * kLog2e;
  auto issue_scores = [&](FragC(&s)[kN8], int stage) {
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk)
      hopper::mma_ss<T, kN8>(s, hopper::k_major<Shape::kBlockM>(smem.q(), warpgroup_row0, kk),
                             hopper::k_major<kBlockN>(smem.k(stage), 0, kk), kk > 0);
    hopper::commit_group();
  };
  auto issue_values = [&](FragC(&o)[kD8], const FragA(&p)[kBlockN / 16], int stage) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
      hopper::mma_rs<T, kD8, true>(o, p[kk], hopper::mn_major<kBlockN>(smem.v(stage), kk), true);
    hopper::commit_group();
  };

  FragC s[kN8], o[kD8];
  FragA p[kBlockN / 16];
  mma::zero(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, rescale[2];
  // Ping-pong: the consumers take turns issuing their products (named barriers 1 and 2, each
  // passed by one consumer's wait and the other's arrival), so one multiplies while the other
  // is in its softmax. Consumer 0 goes first; consumer 1's last turn hands over to nobody.
  const int my_turn = 1 + consumer, their_turn = 2 - consumer;
  auto take_turn = [&] { hopper::named_barrier_sync(my_turn, 2 * 128); };
  auto pass_turn = [&] { hopper::named_barrier_arrive(their_turn, 2 * 128); };
  if (consumer == 1) pass_turn();
  hopper::wait(smem.q_full(), 0);
  hopper::wait(smem.k_full(0), 0);
  take_turn();
  hopper::fence();
  issue_scores(s, 0);
  pass_turn();
  hopper::wait_group<0>();
  hopper::fence_operands(s);
  __syncwarp();
  if (warp_leader) hopper::arrive(smem.k_empty(0));
  block.mask(s, 0, warpgroup_row0, row0);
  flash_detail::online_softmax(s, m, l, rescale, scale_log2);
  mma::to_a<T>(p, s);

  for (int t = 1; t < block.tiles; ++t) {
    const int stage = t % kStages, previous = (t - 1) % kStages;
    hopper::wait(smem.k_full(stage), (t / kStages) & 1);
    hopper::wait(smem.v_full(previous), ((t - 1) / kStages) & 1);
    take_turn();
    hopper::fence();
    issue_scores(s, stage);
    issue_values(o, p, previous);
    pass_turn();
    hopper::wait_group<1>();  // S_t has landed; P·V still runs
    hopper::fence_operands(s);
    __syncwarp();
    if (warp_leader) hopper::arrive(smem.k_empty(stage));
    block.mask(s, t, warpgroup_row0, row0);
    flash_detail::online_softmax(s, m, l, rescale, scale_log2);
    hopper::wait_group<0>();
    hopper::fence_operands(o);
    __syncwarp();
    if (warp_leader) hopper::arrive(smem.v_empty(previous));
    flash_detail::rescale_rows(o, rescale);
    mma::to_a<T>(p, s);
  }
  const int last = (block.tiles - 1) % kStages;
  hopper::wait(smem.v_full(last), ((block.tiles - 1) / kStages) & 1);
  take_turn();
  hopper::fence();
  issue_values(o, p, last);
  if (consumer == 0) pass_turn();
  hopper::wait_group<0>();
  hopper::fence_operands(o);

  // Rows past the sequence end (l = 0 or garbage from the next sequence) are never stored.
  const flash_detail::AccLane lane;
  const std::int64_t row_stride = static_cast<std::int64_t>(dims.num_heads) * kD;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    l[half] = quad_sum(l[half]);
    const int i = block.q0 + row0 + lane.group + 8 * half;
    if (i >= block.seq.len) continue;
    const float inverse = 1.0f / l[half];
    T* row = out + (block.seq.start + i) * row_stride + block.h * kD;
#pragma unroll
    for (int n = 0; n < kD8; ++n)
      *reinterpret_cast<std::uint32_t*>(row + lane.col(n, 0)) =
          mma::pack<T>(o[n].x[2 * half] * inverse, o[n].x[2 * half + 1] * inverse);
    if (lane.quad == 0)
      lse[(block.seq.start + i) * dims.num_heads + block.h] = m[half] * dims.softmax_scale + logf(l[half]);
  }
#endif
}

namespace {

template <typename T, int kD>
void launch_forward(const AttentionDims& dims, const AttentionInputs& in, DType dtype, void* out, float* lse,
                    cudaStream_t stream) {
  using Shape = ForwardShape<kD>;
  ForwardMaps maps{};
  maps.q = rows_map(in.q, dtype, dims.total_tokens, dims.num_heads, kD, Shape::kBlockM);
  const KeyMaps keys = key_maps(dims, in, dtype, kD, Shape::kBlockN);
  maps.k = keys.k, maps.v = keys.v, maps.prefix_k = keys.prefix_k, maps.prefix_v = keys.prefix_v;
  auto kernel = hopper_forward_kernel<T, kD>;
  ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kSharedBytes));
  const dim3 grid(tiles_of(dims.max_seqlen, Shape::kBlockM), dims.num_heads, dims.batch);
  kernel<<<grid, Shape::kThreads, Shape::kSharedBytes, stream>>>(maps, dims, in.cu_seqlens, static_cast<T*>(out), lse);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace zt::cuda::hopper_detail

namespace zt::cuda {

void hopper_attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out,
                              float* lse, cudaStream_t stream) {
  attention_detail::check_dims(dims);
  ZT_REQUIRE(
      hopper_attention_supported(dims, dtype, {inputs.q, inputs.k, inputs.v, inputs.prefix_k, inputs.prefix_v, out}),
      "hopper attention forward: this call (dtype " + std::string(dtype_name(dtype)) + ", head_dim " +
          std::to_string(dims.head_dim) + ") is not one the Hopper kernels take; use flash_attention_forward");
  if (dims.max_seqlen == 0 || dims.total_tokens == 0) return;
  flash_detail::dispatch_flash(dtype, dims.head_dim, [&]<typename T, int kD>() {
    if constexpr (kD == 64 || kD == 128) hopper_detail::launch_forward<T, kD>(dims, inputs, dtype, out, lse, stream);
  });
}

}  // namespace zt::cuda
