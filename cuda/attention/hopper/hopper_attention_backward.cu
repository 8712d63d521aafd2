// The Hopper backward (FlashAttention-3 scheme, atomic dQ):
//   stats       lse · log2 e and delta = rowsum(dO ∘ O), both written [heads][tokens] so a query
//               tile's values are contiguous                             one warp per row
//   dK, dV, dQ  one block per (key tile of 128, kv head, sequence), 3 warpgroups. Warpgroup 0
//               loads K and V once and streams Q and dO tiles of 64 queries (every head of the
//               group) by TMA through 2 stages; warpgroups 1 and 2 own 64 keys each and per
//               query tile issue Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ together, then Pᵀ = exp2(Sᵀ·scale
//               − lse) (masked to 0), dV += Pᵀ·dO, dSᵀ = Pᵀ ∘ (dPᵀ − delta), dK += dSᵀ·Q,
//               all with wgmma (Pᵀ and dSᵀ from registers); dSᵀ also goes to shared memory,
//               double-buffered, from where dQ = dS·K is multiplied, split between the two
//               warpgroups, and goes through shared memory into fp32 dq_accum by bulk
//               reductions (one per query row, issued by 64 threads) that run while the
//               consumers go on. Q and dO arrive by TMA ahead of use, and the consumers
//               prefetch the next query tile's lse and delta into shared memory.
//   dQ          the fp32 sums converted to the input dtype (convert_dq_accum).
// The deterministic mode stays with cuda/attention/flash/ (a kernel per query tile).
#include "cuda/attention/flash/flash_attention_backward_dq.cuh"
#include "cuda/attention/hopper/hopper_attention.cuh"
#include "cuda/attention/hopper/hopper_backward_block.cuh"
#include "cuda/attention/hopper/hopper_backward_consumer.cuh"
#include "cuda/attention/hopper/hopper_tensor_maps.h"
#include "cuda/common/cuda_common.cuh"
#include "runtime/check.h"

namespace zt::cuda::hopper_detail {

using flash_detail::kLog2e;
using mma::FragA;
using mma::FragC;

template <typename T, int kD>
__global__ void __launch_bounds__(128)
    hopper_backward_stats_kernel(const T* out, const T* grad_out, const float* lse, float* lse_log2, float* delta,
                                 std::int64_t tokens, int heads) {
  const int lane = threadIdx.x % 32;
  const std::int64_t rows = tokens * heads;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 4 + threadIdx.x / 32; row < rows;
       row += static_cast<std::int64_t>(gridDim.x) * 4) {
    float sum = 0.0f;
    for (int c = lane; c < kD / 8; c += 32) {
      const uint4 o = *reinterpret_cast<const uint4*>(out + row * kD + c * 8);
      const uint4 d = *reinterpret_cast<const uint4*>(grad_out + row * kD + c * 8);
      const T* ov = reinterpret_cast<const T*>(&o);
      const T* dv = reinterpret_cast<const T*>(&d);
#pragma unroll
      for (int e = 0; e < 8; ++e) sum += static_cast<float>(ov[e]) * static_cast<float>(dv[e]);
    }
    sum = attention_detail::warp_sum(sum);
    if (lane == 0) {
      const std::int64_t transposed = (row % heads) * tokens + row / heads;
      delta[transposed] = sum;
      lse_log2[transposed] = lse[row] * kLog2e;
    }
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(BackwardShape<kD>::kThreads, 1)
    hopper_backward_kernel(const __grid_constant__ BackwardMaps maps, AttentionDims dims, BackwardArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = BackwardShape<kD>;
  constexpr int kStages = Shape::kStages, kM8 = Shape::kBlockM / 8, kD8 = kD / 8;
  extern __shared__ unsigned char shared[];
  const BackwardSharedPlan<Shape> smem(shared);
  const BackwardBlock<Shape> block(dims, args.cu_seqlens);
  if (block.empty()) return;
  if (threadIdx.x == 0) {
    hopper::barrier_init(smem.kv_full(), 1);
    for (int s = 0; s < kStages; ++s) {
      hopper::barrier_init(smem.full(s), 1);
      hopper::barrier_init(smem.empty(s), Shape::kConsumerWarps);
    }
    hopper::barrier_init_fence();
  }
  __syncthreads();

  if (threadIdx.x < 128) {  // the producer warpgroup: one thread issues every copy
    hopper::release_registers<24>();
    if (threadIdx.x != 0) return;
    block.load_keys(maps, smem.k(), smem.v(), smem.kv_full());
    for (int step = 0; step < block.steps; ++step) {
      const int stage = step % kStages;
      hopper::wait(smem.empty(stage), ((step / kStages) & 1) ^ 1);
      block.load_queries(maps, step, smem.q(stage), smem.grad_out(stage), smem.full(stage));
    }
    return;
  }

  hopper::claim_registers<240>();
  const BackwardConsumer<T, Shape> me(block, args, smem, shared);
  FragC dk[kD8], dv[kD8], dq[8];
  mma::zero(dk);
  mma::zero(dv);
  me.load_stats(0);
  hopper::named_barrier_sync(1, Shape::kConsumerThreads);
  hopper::wait(smem.kv_full(), 0);
  for (int step = 0; step < block.steps; ++step) {
    const int stage = step % kStages, i0 = block.first_query(step);
    const std::uint32_t sq = smem.q(stage), sdo = smem.grad_out(stage), sds = smem.ds(step & 1);
    hopper::wait(smem.full(stage), (step / kStages) & 1);
    FragC st[kM8], dpt[kM8];
    me.issue_transposed_products(st, dpt, sq, sdo);
    me.load_stats(step + 1);  // lands during this step; the named barrier below publishes it
    hopper::wait_group<1>();  // Sᵀ has landed
    hopper::fence_operands(st);
    me.probabilities(st, step, i0);
    FragA p[kM8 / 2], ds[kM8 / 2];
    mma::to_a<T>(p, st);
    me.issue_products_from_registers(dv, p, sdo);  // dV += Pᵀ·dO
    hopper::wait_group<1>();                       // dPᵀ has landed
    hopper::fence_operands(dpt);
    me.score_gradients(dpt, st, step);
    mma::to_a<T>(ds, dpt);
    me.stage_ds(ds, sds);
    me.issue_products_from_registers(dk, ds, sq);  // dK += dSᵀ·Q
    hopper::proxy_fence();
    hopper::named_barrier_sync(1, Shape::kConsumerThreads);  // all of dSᵀ is written
    me.issue_dq(dq, sds);
    hopper::wait_group<0>();
    hopper::fence_operands(dq);
    hopper::fence_operands(dk);
    hopper::fence_operands(dv);
    __syncwarp();  // every lane is done with the stage
    if (me.warp_leader) hopper::arrive(smem.empty(stage));
    me.add_dq(dq, step);
  }
  me.finish_dq();
  me.store_key_rows(dk, dims.softmax_scale, args.grad_k, args.grad_prefix_k);
  me.store_key_rows(dv, 1.0f, args.grad_v, args.grad_prefix_v);
#endif
}

namespace {

template <typename T, int kD>
void launch_backward(const AttentionDims& dims, const AttentionInputs& in, DType dtype, const void* out,
                     const void* grad_out, const float* lse, const HopperBackwardScratch& scratch,
                     const AttentionGradOutputs& grads, cudaStream_t stream) {
  using Shape = BackwardShape<kD>;
  const std::int64_t rows = dims.total_tokens * dims.num_heads;
  hopper_backward_stats_kernel<T, kD>
      <<<grid_size(rows, 4), 128, 0, stream>>>(static_cast<const T*>(out), static_cast<const T*>(grad_out), lse,
                                               scratch.lse_log2, scratch.delta, dims.total_tokens, dims.num_heads);
  ZT_CUDA_CHECK(cudaGetLastError());
  ZT_CUDA_CHECK(cudaMemsetAsync(scratch.dq_accum, 0, sizeof(float) * rows * kD, stream));

  BackwardMaps maps{};
  maps.q = rows_map(in.q, dtype, dims.total_tokens, dims.num_heads, kD, Shape::kBlockM);
  maps.grad_out = rows_map(grad_out, dtype, dims.total_tokens, dims.num_heads, kD, Shape::kBlockM);
  maps.k = rows_map(in.k, dtype, dims.total_tokens, dims.num_kv_heads, kD, Shape::kBlockN);
  maps.v = rows_map(in.v, dtype, dims.total_tokens, dims.num_kv_heads, kD, Shape::kBlockN);
  if (dims.prefix_len > 0) {
    const std::int64_t prefix_rows = static_cast<std::int64_t>(dims.batch) * dims.prefix_len;
    maps.prefix_k = rows_map(in.prefix_k, dtype, prefix_rows, dims.num_kv_heads, kD, Shape::kBlockN);
    maps.prefix_v = rows_map(in.prefix_v, dtype, prefix_rows, dims.num_kv_heads, kD, Shape::kBlockN);
  }
  const BackwardArgs args{in.cu_seqlens, scratch.lse_log2, scratch.delta,       scratch.dq_accum,
                          grads.grad_k,  grads.grad_v,     grads.grad_prefix_k, grads.grad_prefix_v};
  auto kernel = hopper_backward_kernel<T, kD>;
  ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kSharedBytes));
  const int tiles =
      flash_detail::tiles_of(dims.prefix_len, Shape::kBlockN) + flash_detail::tiles_of(dims.max_seqlen, Shape::kBlockN);
  const dim3 grid(tiles, dims.num_kv_heads, dims.batch);
  kernel<<<grid, Shape::kThreads, Shape::kSharedBytes, stream>>>(maps, dims, args);
  ZT_CUDA_CHECK(cudaGetLastError());
  flash_detail::convert_dq_accum(dims, dtype, scratch.dq_accum, grads.grad_q, stream);
}

}  // namespace
}  // namespace zt::cuda::hopper_detail

namespace zt::cuda {

void hopper_attention_backward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* out,
                               const void* grad_out, const float* lse, const HopperBackwardScratch& scratch,
                               const AttentionGradOutputs& grads, cudaStream_t stream) {
  attention_detail::check_dims(dims);
  ZT_REQUIRE(
      hopper_attention_supported(dims, dtype,
                                 {inputs.q, inputs.k, inputs.v, inputs.prefix_k, inputs.prefix_v, out, grad_out,
                                  grads.grad_q, grads.grad_k, grads.grad_v, grads.grad_prefix_k, grads.grad_prefix_v}),
      "hopper attention backward: this call (dtype " + std::string(dtype_name(dtype)) + ", head_dim " +
          std::to_string(dims.head_dim) + ") is not one the Hopper kernels take; use flash_attention_backward");
  ZT_REQUIRE(scratch.lse_log2 != nullptr && scratch.delta != nullptr && scratch.dq_accum != nullptr,
             "hopper attention backward: every scratch buffer must be given");
  if (dims.total_tokens == 0) {  // only empty sequences: a prefix gets no gradient
    const std::size_t prefix_bytes =
        static_cast<std::size_t>(dims.batch) * dims.prefix_len * dims.num_kv_heads * dims.head_dim * dtype_size(dtype);
    if (prefix_bytes > 0) {
      ZT_CUDA_CHECK(cudaMemsetAsync(grads.grad_prefix_k, 0, prefix_bytes, stream));
      ZT_CUDA_CHECK(cudaMemsetAsync(grads.grad_prefix_v, 0, prefix_bytes, stream));
    }
    return;
  }
  flash_detail::dispatch_flash(dtype, dims.head_dim, [&]<typename T, int kD>() {
    if constexpr (kD == 64 || kD == 128)
      hopper_detail::launch_backward<T, kD>(dims, inputs, dtype, out, grad_out, lse, scratch, grads, stream);
  });
}

}  // namespace zt::cuda
