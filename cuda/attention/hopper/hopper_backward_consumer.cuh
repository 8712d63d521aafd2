// A consumer warpgroup of the Hopper backward (hopper_attention_backward.cu): its 64 keys of
// the block's key tile and the steps of one query tile, each a small piece the kernel's loop
// calls in order. Accumulators stay in the kernel's registers and are passed in.
#pragma once

#include <cstdint>

#include "cuda/attention/hopper/hopper_backward_block.cuh"

namespace zt::cuda::hopper_detail {

template <typename T, typename Shape>
struct BackwardConsumer {
  static constexpr int kD = Shape::kD, kBlockM = Shape::kBlockM, kBlockN = Shape::kBlockN;
  static constexpr int kM8 = kBlockM / 8, kD8 = kD / 8;
  const BackwardBlock<Shape>& block;
  const BackwardArgs& args;
  const BackwardSharedPlan<Shape>& smem;
  const unsigned char* shared;
  int consumer, key_row0, warp_row0, query_row0, thread;
  bool warp_leader;
  float scale_log2;
  flash_detail::AccLane lane;

  __device__ __forceinline__ BackwardConsumer(const BackwardBlock<Shape>& block_, const BackwardArgs& args_,
                                              const BackwardSharedPlan<Shape>& smem_, const unsigned char* shared_)
      : block(block_),
        args(args_),
        smem(smem_),
        shared(shared_),
        consumer(threadIdx.x / 128 - 1),
        key_row0(64 * consumer),
        warp_row0(key_row0 + 16 * ((threadIdx.x / 32) % 4)),
        query_row0(16 * ((threadIdx.x / 32) % 4)),
        thread(threadIdx.x % 128),
        warp_leader(threadIdx.x % 32 == 0),
        scale_log2(block_.dims.softmax_scale * flash_detail::kLog2e) {}

  // Consumer threads 0 .. 127 (of both consumers) copy step `step`'s lse and delta (64 floats
  // each, 0 past the sequence) into stats buffer step & 1; the consumers' named barrier orders
  // the copy before the reads of the next step and after those of the step before.
  __device__ __forceinline__ void load_stats(int step) const {
    const int index = threadIdx.x - 128, r = index % kBlockM;
    if (index >= 2 * kBlockM || step >= block.steps) return;
    const int i = block.first_query(step) + r;
    const float* source = index < kBlockM ? args.lse_log2 : args.delta;
    const float value =
        i < block.seq.len
            ? source[static_cast<std::int64_t>(block.head(step)) * block.dims.total_tokens + block.seq.start + i]
            : 0.0f;
    asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(smem.lse(step & 1) + 4 * index), "f"(value) : "memory");
  }

  // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for this consumer's keys, both operands in shared memory; two
  // commit groups.
  __device__ __forceinline__ void issue_transposed_products(mma::FragC (&st)[kM8], mma::FragC (&dpt)[kM8],
                                                            std::uint32_t sq, std::uint32_t sdo) const {
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
  }

  __device__ __forceinline__ const float* stats(int step) const {
    return reinterpret_cast<const float*>(shared + (smem.lse(step & 1) - mma::smem_address(shared)));
  }

  // Sᵀ into Pᵀ = exp2(Sᵀ·scale·log2 e − lse·log2 e), zero where the mask hides the pair.
  __device__ __forceinline__ void probabilities(mma::FragC (&st)[kM8], int step, int i0) const {
    const float* lse = stats(step);
#pragma unroll
    for (int n = 0; n < kM8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) st[n].x[e] = mma::exp2_approx(fmaf(st[n].x[e], scale_log2, -lse[lane.col(n, e)]));
    block.mask(st, key_row0, i0);
  }

  // dPᵀ into dSᵀ = Pᵀ ∘ (dPᵀ − delta).
  __device__ __forceinline__ void score_gradients(mma::FragC (&dpt)[kM8], const mma::FragC (&pt)[kM8], int step) const {
    const float* delta = stats(step) + kBlockM;
#pragma unroll
    for (int n = 0; n < kM8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) dpt[n].x[e] = pt[n].x[e] * (dpt[n].x[e] - delta[lane.col(n, e)]);
  }

  // acc += Aᵀ-tile (registers, this consumer's keys × the query tile) · B, B the query tile's
  // [kBlockM][kD] rows in shared memory read transposed; one commit group.
  __device__ __forceinline__ void issue_products_from_registers(mma::FragC (&acc)[kD8], const mma::FragA (&a)[kM8 / 2],
                                                                std::uint32_t b) const {
    hopper::fence();
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk)
      hopper::mma_rs<T, kD8, true>(acc, a[kk], hopper::mn_major<kBlockM>(b, kk), true);
    hopper::commit_group();
  }

  // dSᵀ into shared memory (swizzled) for dQ: A-fragment register r holds row group + 8(r & 1),
  // columns 16kk + 8(r >> 1) + 2·quad and the next.
  __device__ __forceinline__ void stage_ds(const mma::FragA (&ds)[kM8 / 2], std::uint32_t sds) const {
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int row = warp_row0 + lane.group + 8 * (r & 1), col = 16 * kk + 8 * (r >> 1) + 2 * lane.quad;
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sds + hopper::swizzled_offset<kBlockN>(row, col)),
                     "r"(ds[kk].x[r])
                     : "memory");
      }
  }

  // dQ = dS·K of the query tile, this consumer's share: 64 of the columns over all keys at
  // head_dim 128, all columns over its own keys at 64. Both operands read transposed.
  __device__ __forceinline__ void issue_dq(mma::FragC (&dq)[8], std::uint32_t sds) const {
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
  }

  // Adds step `step`'s dQ (landed in registers) into dq_accum through this consumer's tile in
  // shared memory: thread r < 64 of the consumer adds query row r with one bulk reduction.
  __device__ __forceinline__ void add_dq(const mma::FragC (&dq)[8], int step) const {
    const int tile_barrier = 3 + consumer;
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
      hopper::bulk_add_f32(args.dq_accum + ((block.seq.start + i) * block.dims.num_heads + block.head(step)) * kD + c0,
                           smem.dq(consumer) + 4 * thread * Shape::kDqPitch, 64 * 4);
      hopper::bulk_commit();
    }
  }

  // The block's dQ reductions must be complete before it exits.
  __device__ __forceinline__ void finish_dq() const {
    if (thread < kBlockM) hopper::bulk_wait();
  }

  // Writes this consumer's dK or dV rows (scaled by factor) to the gradient of the tile's
  // source, the prefix's or the sequence's.
  __device__ __forceinline__ void store_key_rows(const mma::FragC (&acc)[kD8], float factor, void* own,
                                                 void* prefix) const {
    const AttentionDims& dims = block.dims;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int j = block.k0 + warp_row0 + lane.group + 8 * half;
      if (j >= block.keys) continue;
      const std::int64_t row =
          block.prefix_tile ? static_cast<std::int64_t>(block.b) * dims.prefix_len + j : block.seq.start + j;
      T* dst = static_cast<T*>(block.prefix_tile ? prefix : own) + (row * dims.num_kv_heads + block.g) * kD;
#pragma unroll
      for (int n = 0; n < kD8; ++n)
        *reinterpret_cast<std::uint32_t*>(dst + lane.col(n, 0)) =
            mma::pack<T>(acc[n].x[2 * half] * factor, acc[n].x[2 * half + 1] * factor);
    }
  }
};

}  // namespace zt::cuda::hopper_detail
