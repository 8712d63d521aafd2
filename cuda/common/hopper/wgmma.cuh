// Hopper warpgroup matrix products (PTX `wgmma.mma_async`, sm_90a): a warpgroup of 4 warps
// multiplies a 64-row A (from shared memory, or from registers) by an N-column B in shared
// memory, accumulating fp32 in registers, asynchronously: issue, commit a group, wait for it.
//
// Shared-memory operands are described by a 64-bit matrix descriptor. Every tile here is the
// layout TMA writes with 128-byte swizzle (`tma.cuh`): a [rows][64] block of 16-bit elements
// per 64 columns, each row 128 bytes, swizzled in 1024-byte atoms of 8 rows, blocks stacked
// `rows · 128` bytes apart, the tile 1024-byte aligned. Such a tile serves two ways:
//   - K-major (the reduction runs along the columns: Q and K in S = Q·Kᵀ): k-step kk starts
//     32·(kk % 4) bytes into block kk / 4, with 1024 bytes between 8-row groups;
//   - MN-major (the reduction runs along the rows: V in O = P·V, read transposed): k-step kk
//     starts 16 rows = 2048 bytes down, with 1024 bytes between 8-row groups along k and the
//     block stride between 64-column groups along n.
//
// The fp32 accumulator of one warpgroup is the mma.sync m16n8 layout repeated: warp w holds
// rows 16w .. 16w + 15 and, per 8 columns, one FragC (mma.cuh); an A operand in registers is
// likewise warp w's FragA of rows 16w .. on. So probabilities become the A of P·V in place,
// exactly as in the Ampere kernels.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cuda/common/mma.cuh"

namespace zt::cuda::hopper {

using mma::FragA;
using mma::FragC;

inline constexpr int kSwizzleBytes = 128;  // one row of a 64-column block
inline constexpr int kAtomBytes = 1024;    // 8 rows: the swizzle pattern's period

__device__ __forceinline__ std::uint64_t descriptor_field(std::uint32_t bytes) { return (bytes & 0x3FFFF) >> 4; }

// A descriptor of a 128-byte-swizzled operand starting at shared address `start`.
__device__ __forceinline__ std::uint64_t smem_descriptor(std::uint32_t start, std::uint32_t leading_bytes,
                                                         std::uint32_t stride_bytes) {
  return descriptor_field(start) | descriptor_field(leading_bytes) << 16 | descriptor_field(stride_bytes) << 32 |
         1ull << 62;
}

// K-major operand: k-step kk of a tile of `kRows` rows at `tile`, rows from `row0` (a multiple of 8).
template <int kRows>
__device__ __forceinline__ std::uint64_t k_major(std::uint32_t tile, int row0, int kk) {
  return smem_descriptor(tile + (kk / 4) * kRows * kSwizzleBytes + row0 * kSwizzleBytes + (kk % 4) * 32, 16,
                         kAtomBytes);
}

// MN-major operand (read transposed): k-step kk (rows row0 + 16kk ..) of a tile of `kRows` rows.
template <int kRows>
__device__ __forceinline__ std::uint64_t mn_major(std::uint32_t tile, int kk, int row0 = 0) {
  return smem_descriptor(tile + (row0 + kk * 16) * kSwizzleBytes, kRows * kSwizzleBytes, kAtomBytes);
}

// Byte offset of element (row, col) in a 128-byte-swizzled tile of kRows rows, 16-bit
// elements: where a thread writes an operand that wgmma then reads (after proxy_fence).
template <int kRows>
__device__ __forceinline__ std::uint32_t swizzled_offset(int row, int col) {
  return (col / 64) * kRows * kSwizzleBytes + row * kSwizzleBytes + ((((col % 64) / 8) ^ (row % 8)) * 16) +
         (col % 8) * 2;
}

// Makes register writes by ordinary instructions visible to the next wgmma (accumulators
// rescaled, A fragments packed); needed before the first product of every batch.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit_group() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most kPending committed groups are still running.
template <int kPending>
__device__ __forceinline__ void wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving reads or writes of the accumulators across an asynchronous
// product: they are in flight between issue and wait.
template <int kN8>
__device__ __forceinline__ void fence_operands(FragC (&acc)[kN8]) {
#pragma unroll
  for (int n = 0; n < kN8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(acc[n].x[e])::"memory");
}

#define ZT_WGMMA_ACC4(d, j) "+f"(d[j].x[0]), "+f"(d[j].x[1]), "+f"(d[j].x[2]), "+f"(d[j].x[3])
#define ZT_WGMMA_ACC32(d)                                                                                  \
  ZT_WGMMA_ACC4(d, 0), ZT_WGMMA_ACC4(d, 1), ZT_WGMMA_ACC4(d, 2), ZT_WGMMA_ACC4(d, 3), ZT_WGMMA_ACC4(d, 4), \
      ZT_WGMMA_ACC4(d, 5), ZT_WGMMA_ACC4(d, 6), ZT_WGMMA_ACC4(d, 7)
#define ZT_WGMMA_ACC64(d)                                                                                  \
  ZT_WGMMA_ACC32(d), ZT_WGMMA_ACC4(d, 8), ZT_WGMMA_ACC4(d, 9), ZT_WGMMA_ACC4(d, 10), ZT_WGMMA_ACC4(d, 11), \
      ZT_WGMMA_ACC4(d, 12), ZT_WGMMA_ACC4(d, 13), ZT_WGMMA_ACC4(d, 14), ZT_WGMMA_ACC4(d, 15)

#define ZT_WGMMA_N64 "m64n64k16.f32"
#define ZT_WGMMA_N128 "m64n128k16.f32"
#define ZT_WGMMA_D32                                                                                                 \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%" \
  "30,%31}"
#define ZT_WGMMA_D64                                                                                                 \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%" \
  "30,"                                                                                                              \
  "%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58," \
  "%59,%60,%61,%62,%63}"

// acc (+)= A·B, A and B in shared memory (K-major unless transposed: MN-major): the
// accumulators are overwritten when `accumulate` is false. N = 8 · kN8 columns, 64 or 128.
template <typename T, int kN8, bool kTransposeB = false, bool kTransposeA = false>
__device__ __forceinline__ void mma_ss(FragC (&acc)[kN8], std::uint64_t a, std::uint64_t b, bool accumulate) {
  static_assert(kN8 == 8 || kN8 == 16, "wgmma products here are 64 or 128 columns wide");
  const int scale_d = accumulate ? 1 : 0;
#define ZT_WGMMA_SS(SHAPE, TYPE, D, A, B, S, TB, TA, ACC)                                                          \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " S ", 0;\nwgmma.mma_async.sync.aligned." SHAPE "." TYPE "." TYPE \
               " " D ", " A ", " B ", p, 1, 1, " TA ", " TB ";\n}\n"                                               \
               : ACC(acc)                                                                                          \
               : "l"(a), "l"(b), "r"(scale_d), "n"(kTransposeB ? 1 : 0), "n"(kTransposeA ? 1 : 0))
  if constexpr (std::is_same_v<T, __nv_bfloat16> && kN8 == 8)
    ZT_WGMMA_SS(ZT_WGMMA_N64, "bf16", ZT_WGMMA_D32, "%32", "%33", "%34", "%35", "%36", ZT_WGMMA_ACC32);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    ZT_WGMMA_SS(ZT_WGMMA_N128, "bf16", ZT_WGMMA_D64, "%64", "%65", "%66", "%67", "%68", ZT_WGMMA_ACC64);
  else if constexpr (kN8 == 8)
    ZT_WGMMA_SS(ZT_WGMMA_N64, "f16", ZT_WGMMA_D32, "%32", "%33", "%34", "%35", "%36", ZT_WGMMA_ACC32);
  else
    ZT_WGMMA_SS(ZT_WGMMA_N128, "f16", ZT_WGMMA_D64, "%64", "%65", "%66", "%67", "%68", ZT_WGMMA_ACC64);
#undef ZT_WGMMA_SS
}

// acc (+)= A·B with A from registers (warp w's FragA of rows 16w ..) and B in shared memory.
template <typename T, int kN8, bool kTransposeB = false>
__device__ __forceinline__ void mma_rs(FragC (&acc)[kN8], const FragA& a, std::uint64_t b, bool accumulate) {
  static_assert(kN8 == 8 || kN8 == 16, "wgmma products here are 64 or 128 columns wide");
  const int scale_d = accumulate ? 1 : 0;
#define ZT_WGMMA_RS(SHAPE, TYPE, D, A, B, S, TB, ACC)                                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " S ", 0;\nwgmma.mma_async.sync.aligned." SHAPE "." TYPE "." TYPE \
               " " D ", " A ", " B ", p, 1, 1, " TB ";\n}\n"                                                       \
               : ACC(acc)                                                                                          \
               : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "l"(b), "r"(scale_d), "n"(kTransposeB ? 1 : 0))
  if constexpr (std::is_same_v<T, __nv_bfloat16> && kN8 == 8)
    ZT_WGMMA_RS(ZT_WGMMA_N64, "bf16", ZT_WGMMA_D32, "{%32,%33,%34,%35}", "%36", "%37", "%38", ZT_WGMMA_ACC32);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    ZT_WGMMA_RS(ZT_WGMMA_N128, "bf16", ZT_WGMMA_D64, "{%64,%65,%66,%67}", "%68", "%69", "%70", ZT_WGMMA_ACC64);
  else if constexpr (kN8 == 8)
    ZT_WGMMA_RS(ZT_WGMMA_N64, "f16", ZT_WGMMA_D32, "{%32,%33,%34,%35}", "%36", "%37", "%38", ZT_WGMMA_ACC32);
  else
    ZT_WGMMA_RS(ZT_WGMMA_N128, "f16", ZT_WGMMA_D64, "{%64,%65,%66,%67}", "%68", "%69", "%70", ZT_WGMMA_ACC64);
#undef ZT_WGMMA_RS
}

#undef ZT_WGMMA_ACC4
#undef ZT_WGMMA_ACC32
#undef ZT_WGMMA_ACC64
#undef ZT_WGMMA_N64
#undef ZT_WGMMA_N128
#undef ZT_WGMMA_D32
#undef ZT_WGMMA_D64

// Moves this warpgroup's register budget (per thread, a multiple of 8 in 24 .. 256): producer
// warps give registers up so the consumers of the same block can take them.
template <int kRegisters>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

}  // namespace zt::cuda::hopper
