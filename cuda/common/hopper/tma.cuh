// Hopper bulk tensor copies (TMA) and the shared-memory barriers (mbarrier) that say when they
// have landed, sm_90a. One thread issues a copy of a whole tile described by a tensor map
// (tensor_map.h); the barrier counts the bytes in flight (`expect_bytes`) and completes its
// phase when they have all arrived, so waiting threads never poll the data itself.
//
// A barrier alternates between two phases; a waiter names the parity of the phase it waits
// for. Producer and consumers of a ring of kStages buffers both walk it with (stage, parity):
// a consumer waits "full" with parity (t / kStages) & 1, a producer waits "empty" with the
// opposite parity, which a fresh barrier already satisfies, so the first pass never blocks.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cuda/common/mma.cuh"

namespace zt::cuda::hopper {

__device__ __forceinline__ void barrier_init(std::uint32_t barrier, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals) : "memory");
}

// Makes initialised barriers visible to the copy engine; then the block synchronises.
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` of copies that will complete on this barrier.
__device__ __forceinline__ void expect_bytes(std::uint32_t barrier, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
}

__device__ __forceinline__ void arrive(std::uint32_t barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}

__device__ __forceinline__ void wait(std::uint32_t barrier, std::uint32_t parity) {
  std::uint32_t done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(barrier), "r"(parity)
                 : "memory");
}

// Copies the box at coordinates (c0 innermost, c1, c2) of a 3-D tensor map into shared memory
// at `dst`, completing on `barrier`. Rows outside the tensor arrive as zeros.
__device__ __forceinline__ void load_box(std::uint32_t dst, const CUtensorMap& map, int c0, int c1, int c2,
                                         std::uint32_t barrier) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(barrier)
      : "memory");
}

// Adds `bytes` (a multiple of 16) of fp32 from shared memory into global memory, element-wise,
// as one bulk operation of this thread; grouped by bulk_commit.
__device__ __forceinline__ void bulk_add_f32(float* dst, std::uint32_t src, std::uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until this thread's committed bulk operations have read their shared-memory sources.
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// Waits until this thread's committed bulk operations are complete, their writes included.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Fetches a tensor map (a kernel parameter) into the copy engine's cache ahead of first use.
__device__ __forceinline__ void prefetch_map(const CUtensorMap& map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(&map)) : "memory");
}

// Orders this thread's ordinary shared-memory writes before later reads by the asynchronous
// proxy (wgmma operands, TMA stores); follow it with a barrier among the writers and readers.
__device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Synchronises the `threads` threads (whole warps) that use named barrier `id` (1 .. 15; 0 is
// __syncthreads'), for kernels whose warps part ways.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Counts this thread's warp towards named barrier `id` without waiting.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// What every kernel's plan of its dynamic shared memory starts from: addresses from the first
// 1024-byte boundary (where a 128-byte-swizzled tile must start; the kernel asks for 1024 bytes
// of slack), and its mbarriers, 8 bytes each, from `barrier_offset`. A kernel's plan adds where
// its tiles lie and which barrier is which.
struct SharedMemoryPlan {
  std::uint32_t base;
  std::uint32_t barriers;
  __device__ __forceinline__ SharedMemoryPlan(const unsigned char* shared, int barrier_offset)
      : base((mma::smem_address(shared) + 1023) & ~1023u), barriers(base + barrier_offset) {}
  __device__ __forceinline__ std::uint32_t barrier(int i) const { return barriers + 8 * i; }
};

}  // namespace zt::cuda::hopper
