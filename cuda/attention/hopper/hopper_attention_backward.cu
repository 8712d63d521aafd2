// The Hopper backward (FlashAttention-3 scheme, atomic dQ):
//   stats       lse · log2 e and delta = rowsum(dO ∘ O), both written [heads][tokens] so a query
//               tile's values are contiguous                             one warp per row
//   dK, dV, dQ  one block per (key tile of 128, kv head, share of the group's heads, sequence),
//               3 warpgroups, dispatched heaviest key tile first. Warpgroup 0 loads K and V
//               once and streams Q and dO tiles of 64 queries (every head of its share) by TMA
//               through 2 stages; warpgroups 1 and 2 own 64 keys each and per
//               query tile issue Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ together, then Pᵀ = exp2(Sᵀ·scale
//               − lse) (masked to 0), dV += Pᵀ·dO, dSᵀ = Pᵀ ∘ (dPᵀ − delta), dK += dSᵀ·Q,
//               all with wgmma (Pᵀ and dSᵀ from registers); dSᵀ also goes to shared memory,
//               double-buffered, from where dQ = dS·K is multiplied, split between the two
//               warpgroups, and goes through shared memory into fp32 dq_accum by bulk
//               reductions (one per query row, issued by 64 threads) that run while the
//               consumers go on. Q and dO arrive by TMA ahead of use, and the consumers
//               prefetch the next query tile's lse and delta into shared memory.
//               A GQA group's heads are split over blocks when one block per key tile and
//               kv head would leave SMs idle or one heavy block setting the pace; the blocks
//               then add their partial dK and dV into fp32 sums.
//   dQ          the fp32 sums converted to the input dtype (convert_dq_accum), and dK, dV
//               too when the heads were split.
// The deterministic mode stays with cuda/attention/flash/ (a kernel per query tile).
#include "cuda/attention/flash/flash_attention_backward_dq.cuh"
#include "cuda/attention/hopper/hopper_attention.cuh"
#include "cuda/attention/hopper/hopper_backward_block.cuh"
#include "cuda/attention/hopper/hopper_tensor_maps.h"
#include "cuda/common/cuda_common.cuh"
#include "cuda/common/multiprocessor_count.h"
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
    const float sum = flash_detail::row_dot<T, kD>(out + row * kD, grad_out + row * kD, lane);
    if (lane == 0) {
      const std::int64_t transposed = (row % heads) * tokens + row / heads;
      delta[transposed] = sum;
      lse_log2[transposed] = lse[row] * kLog2e;
    }
  }
}

// Writes a consumer's dK or dV rows (its 64 keys, scaled by factor) to the gradient of the
// tile's source, the prefix's or the sequence's.
template <typename T, typename Shape, int kD8>
__device__ __forceinline__ void store_key_rows(const BackwardBlock<Shape>& block, const FragC (&acc)[kD8], float factor,
                                               void* own, void* prefix, int warp_row0) {
  const flash_detail::AccLane lane;
  const AttentionDims& dims = block.dims;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int j = block.k0 + warp_row0 + lane.group + 8 * half;
    if (j >= block.keys) continue;
    const std::int64_t row =
        block.prefix_tile ? static_cast<std::int64_t>(block.b) * dims.prefix_len + j : block.seq.start + j;
    T* dst = static_cast<T*>(block.prefix_tile ? prefix : own) + (row * dims.num_kv_heads + block.g) * (kD8 * 8);
#pragma unroll
    for (int n = 0; n < kD8; ++n)
      *reinterpret_cast<std::uint32_t*>(dst + lane.col(n, 0)) =
          mma::pack<T>(acc[n].x[2 * half] * factor, acc[n].x[2 * half + 1] * factor);
  }
}

// Adds a consumer's partial dK or dV rows (its 64 keys, scaled by factor) into the fp32 sums
// [tokens][kv_heads][head_dim] of the blocks that split the group's heads (never a prefix tile).
template <typename Shape, int kD8>
__device__ __forceinline__ void add_key_rows(const BackwardBlock<Shape>& block, const FragC (&acc)[kD8], float factor,
                                             float* sums, int warp_row0) {
  const flash_detail::AccLane lane;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int j = block.k0 + warp_row0 + lane.group + 8 * half;
    if (j >= block.keys) continue;
    float* dst = sums + ((block.seq.start + j) * block.dims.num_kv_heads + block.g) * (kD8 * 8);
#pragma unroll
    for (int n = 0; n < kD8; ++n)
      atomicAdd(reinterpret_cast<float2*>(dst + lane.col(n, 0)),
                make_float2(acc[n].x[2 * half] * factor, acc[n].x[2 * half + 1] * factor));
  }
}

// The split blocks' fp32 dK and dV sums rounded to the gradients' dtype.
template <typename T>
__global__ void convert_key_sums_kernel(const float* dk_sum, const float* dv_sum, T* grad_k, T* grad_v,
                                        std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    grad_k[i] = static_cast<T>(dk_sum[i]);
    grad_v[i] = static_cast<T>(dv_sum[i]);
  }
}

// Consumer threads 0 .. 127 (of both consumers) copy step `step`'s lse and delta (64 floats
// each, 0 past the sequence) into stats buffer `buffer`; the consumers' named barrier orders it.
template <typename Shape>
__device__ __forceinline__ void load_stats(const BackwardBlock<Shape>& block, const BackwardArgs& args,
                                           const BackwardSharedPlan<Shape>& smem, int step, int buffer) {
  const int thread = threadIdx.x - 128, r = thread % Shape::kBlockM;
  if (thread >= 2 * Shape::kBlockM || step >= block.steps) return;
  const int i = block.first_query(step) + r;
  const float* source = thread < Shape::kBlockM ? args.lse_log2 : args.delta;
  const float value =
      i < block.seq.len
          ? source[static_cast<std::int64_t>(block.head(step)) * block.dims.total_tokens + block.seq.start + i]
          : 0.0f;
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(smem.lse(buffer) + 4 * thread), "f"(value) : "memory");
}

template <typename T, int kD>
__global__ void __launch_bounds__(BackwardShape<kD>::kThreads, 1)
    hopper_backward_kernel(const __grid_constant__ BackwardMaps maps, AttentionDims dims, BackwardArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = BackwardShape<kD>;
  constexpr int kBlockM = Shape::kBlockM, kBlockN = Shape::kBlockN, kStages = Shape::kStages;
  constexpr int kM8 = kBlockM / 8, kD8 = kD / 8;
  extern __shared__ unsigned char shared[];
  const BackwardSharedPlan<Shape> smem(shared);
  const BackwardBlock<Shape> block(dims, args.cu_seqlens, args.head_splits);
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

  const int warpgroup = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4;
  if (warpgroup == 0) {
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
  const int consumer = warpgroup - 1, key_row0 = 64 * consumer;
  const int warp_row0 = key_row0 + 16 * warp, query_row0 = 16 * warp;
  const bool warp_leader = threadIdx.x % 32 == 0;
  const float scale_log2 = dims.softmax_scale * kLog2e;
  const flash_detail::AccLane lane;
  FragC dk[kD8], dv[kD8], dq[8];
  mma::zero(dk);
  mma::zero(dv);
  // Adds step `step`'s dQ (landed in registers) into dq_accum through this consumer's tile in
  // shared memory: thread r < 64 of the consumer adds query row r with one bulk reduction.
  const int thread = threadIdx.x % 128, tile_barrier = 3 + consumer;
  auto add_dq = [&](int step) {
    if (thread < kBlockM) hopper::bulk_wait_read();  // its previous row has been read
    hopper::named_barrier_sync(tile_barrier, 128);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = query_row0 + lane.group + 8 * half;
        asm volatile(
            "st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(smem.dq(consumer) + 4 * (r * Shape::kDqPitch + lane.col(n, 0))),
            "f"(dq[n].x[2 * half]), "f"(dq[n].x[2 * half + 1])
            : "memory");
      }
    hopper::proxy_fence();
    hopper::named_barrier_sync(tile_barrier, 128);
    const int i = block.first_query(step) + thread;
    if (thread < kBlockM && i < block.seq.len) {
      const int c0 = Shape::kDqSplitsKeys ? 0 : 64 * consumer;
      hopper::bulk_add_f32(args.dq_accum + ((block.seq.start + i) * dims.num_heads + block.head(step)) * kD + c0,
                           smem.dq(consumer) + 4 * thread * Shape::kDqPitch, 64 * 4);
      hopper::bulk_commit();
    }
  };
  load_stats(block, args, smem, 0, 0);
  hopper::named_barrier_sync(1, Shape::kConsumerThreads);
  hopper::wait(smem.kv_full(), 0);

  for (int step = 0; step < block.steps; ++step) {
    const int stage = step % kStages, i0 = block.first_query(step);
    const std::uint32_t sq = smem.q(stage), sdo = smem.grad_out(stage), sds = smem.ds(step & 1);
    hopper::wait(smem.full(stage), (step / kStages) & 1);
    FragC st[kM8], dpt[kM8];
    hopper::fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk)
      hopper::mma_ss<T, kM8>(st, hopper::k_major<kBlockN>(smem.k(), key_row0, kk), hopper::k_major<kBlockM>(sq, 0, kk),
                             kk > 0);
    hopper::commit_group();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk)
      hopper::mma_ss<T, kM8>(dpt, hopper::k_major<kBlockN>(smem.v(), key_row0, kk),
                             hopper::k_major<kBlockM>(sdo, 0, kk), kk > 0);
    hopper::commit_group();

    // The next step's statistics land during this one; the named barrier below publishes them.
    load_stats(block, args, smem, step + 1, (step + 1) & 1);
    hopper::wait_group<1>();  // Sᵀ has landed
    hopper::fence_operands(st);
    const float* lse = reinterpret_cast<const float*>(shared + (smem.lse(step & 1) - mma::smem_address(shared)));
    const float* delta = lse + kBlockM;
#pragma unroll
    for (int n = 0; n < kM8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) st[n].x[e] = mma::exp2_approx(fmaf(st[n].x[e], scale_log2, -lse[lane.col(n, e)]));
    block.mask(st, key_row0, i0);
    FragA p[kBlockM / 16], ds[kBlockM / 16];
    mma::to_a<T>(p, st);
    hopper::fence();
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk)
      hopper::mma_rs<T, kD8, true>(dv, p[kk], hopper::mn_major<kBlockM>(sdo, kk), true);
    hopper::commit_group();

    hopper::wait_group<1>();  // dPᵀ has landed
    hopper::fence_operands(dpt);
#pragma unroll
    for (int n = 0; n < kM8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) dpt[n].x[e] = st[n].x[e] * (dpt[n].x[e] - delta[lane.col(n, e)]);
    mma::to_a<T>(ds, dpt);
    // dSᵀ into shared memory for dQ: A-fragment register r holds row group + 8(r & 1), columns
    // 16kk + 8(r >> 1) + 2·quad and the next.
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int row = warp_row0 + lane.group + 8 * (r & 1), col = 16 * kk + 8 * (r >> 1) + 2 * lane.quad;
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sds + hopper::swizzled_offset<kBlockN>(row, col)),
                     "r"(ds[kk].x[r])
                     : "memory");
      }
    hopper::fence();
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk)
      hopper::mma_rs<T, kD8, true>(dk, ds[kk], hopper::mn_major<kBlockM>(sq, kk), true);
    hopper::commit_group();
    hopper::proxy_fence();
    hopper::named_barrier_sync(1, Shape::kConsumerThreads);  // all of dSᵀ is written

    hopper::fence();
    if constexpr (Shape::kDqSplitsKeys) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        hopper::mma_ss<T, 8, true, true>(dq, hopper::mn_major<kBlockN>(sds, kk, key_row0),
                                         hopper::mn_major<kBlockN>(smem.k(), kk, key_row0), kk > 0);
    } else {
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk)
        hopper::mma_ss<T, 8, true, true>(
            dq, hopper::mn_major<kBlockN>(sds, kk),
            hopper::mn_major<kBlockN>(smem.k() + consumer * kBlockN * hopper::kSwizzleBytes, kk), kk > 0);
    }
    hopper::commit_group();
    hopper::wait_group<0>();
    hopper::fence_operands(dq);
    hopper::fence_operands(dk);
    hopper::fence_operands(dv);
    __syncwarp();                                        // every lane is done with the stage's lse and delta
    if (warp_leader) hopper::arrive(smem.empty(stage));  // Q and dO are no longer read
    add_dq(step);
  }
  if (thread < kBlockM) hopper::bulk_wait();

  if (args.head_splits > 1) {
    add_key_rows(block, dk, dims.softmax_scale, args.dk_sum, warp_row0);
    add_key_rows(block, dv, 1.0f, args.dv_sum, warp_row0);
  } else {
    store_key_rows<T>(block, dk, dims.softmax_scale, args.grad_k, args.grad_prefix_k, warp_row0);
    store_key_rows<T>(block, dv, 1.0f, args.grad_v, args.grad_prefix_v, warp_row0);
  }
#endif
}

namespace {

std::int64_t backward_key_tiles(const AttentionDims& dims) {
  return flash_detail::tiles_of(dims.prefix_len, BackwardShape<128>::kBlockN) +
         flash_detail::tiles_of(dims.max_seqlen, BackwardShape<128>::kBlockN);
}

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
  const KeyMaps keys = key_maps(dims, in, dtype, kD, Shape::kBlockN);
  maps.k = keys.k, maps.v = keys.v, maps.prefix_k = keys.prefix_k, maps.prefix_v = keys.prefix_v;
  const int splits = scratch.key_sums != nullptr ? hopper_backward_head_splits(dims) : 1;
  const std::int64_t key_elements = dims.total_tokens * dims.num_kv_heads * kD;
  float* dk_sum = splits > 1 ? scratch.key_sums : nullptr;
  float* dv_sum = splits > 1 ? scratch.key_sums + key_elements : nullptr;
  if (splits > 1) ZT_CUDA_CHECK(cudaMemsetAsync(dk_sum, 0, 2 * sizeof(float) * key_elements, stream));
  const BackwardArgs args{in.cu_seqlens, scratch.lse_log2,    scratch.delta,       scratch.dq_accum, grads.grad_k,
                          grads.grad_v,  grads.grad_prefix_k, grads.grad_prefix_v, splits,           dk_sum,
                          dv_sum};
  auto kernel = hopper_backward_kernel<T, kD>;
  ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kSharedBytes));
  const std::int64_t blocks = backward_key_tiles(dims) * dims.num_kv_heads * splits * dims.batch;
  kernel<<<static_cast<unsigned>(blocks), Shape::kThreads, Shape::kSharedBytes, stream>>>(maps, dims, args);
  ZT_CUDA_CHECK(cudaGetLastError());
  flash_detail::convert_dq_accum(dims, dtype, scratch.dq_accum, grads.grad_q, stream);
  if (splits > 1) {
    convert_key_sums_kernel<T><<<grid_size(key_elements, 256), 256, 0, stream>>>(
        dk_sum, dv_sum, static_cast<T*>(grads.grad_k), static_cast<T*>(grads.grad_v), key_elements);
    ZT_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace
}  // namespace zt::cuda::hopper_detail

namespace zt::cuda {

// The fewest shares of a GQA group's heads that give two blocks per SM: the blocks then run
// heaviest first with the light ones filling in, where one block per (key tile, kv head) gives
// fewer blocks than SMs at training shapes and the diagonal's first tile paces the kernel.
int hopper_backward_head_splits(const AttentionDims& dims) {
  const int group = dims.num_heads / dims.num_kv_heads;
  if (group == 1 || dims.prefix_len > 0) return 1;
  const std::int64_t blocks = hopper_detail::backward_key_tiles(dims) * dims.num_kv_heads * dims.batch;
  const std::int64_t wanted = 2 * static_cast<std::int64_t>(multiprocessor_count());
  for (int splits = 1; splits < group; ++splits)
    if (group % splits == 0 && blocks * splits >= wanted) return splits;
  return group;
}

std::int64_t hopper_backward_key_sum_floats(const AttentionDims& dims) {
  return hopper_backward_head_splits(dims) > 1 ? 2 * dims.total_tokens * dims.num_kv_heads * dims.head_dim : 0;
}

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
