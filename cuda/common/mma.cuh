// Tensor-core building blocks for 16-bit inputs with fp32 accumulation: the register
// fragments of mma.sync.m16n8k16, ldmatrix loads that fill them from shared memory, and the
// packing that turns an fp32 accumulator back into a 16-bit A operand.
//
// Fragment layouts (lane = 4 * group + quad, PTX ISA "mma.m16n8k16"):
//   A 16x16: x[0] row group, cols 2q..2q+1; x[1] row group+8, same cols;
//            x[2] row group, cols 8+2q..; x[3] row group+8, cols 8+2q..
//   B 16x8:  x[0] k 2q..2q+1, col group;  x[1] k 8+2q.., col group
//   C 16x8:  x[0..1] row group, cols 2q..2q+1; x[2..3] row group+8, same cols
// An accumulator pair C(n-block 2j), C(n-block 2j+1) therefore holds exactly the A fragment
// of k-step j once packed, which is how probabilities become the A operand of P·V without
// leaving registers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace zt::cuda::mma {

struct FragA {
  std::uint32_t x[4];
};
struct FragB {
  std::uint32_t x[2];
};
struct FragC {
  float x[4];
};

template <typename T>
inline constexpr bool kIsHalf16 = std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// D += A·B with T (bfloat16 or float16) inputs and fp32 accumulation.
template <typename T>
__device__ __forceinline__ void mma_16816(FragC& d, const FragA& a, std::uint32_t b0, std::uint32_t b1) {
  static_assert(kIsHalf16<T>, "mma_16816 takes bfloat16 or float16");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b0), "r"(b1));
  }
}

// Four 8x8 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i of every
// lane receives its share of matrix i (row lane/4, cols 2(lane%4)..; transposed with _trans).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Two floats rounded to T, the first in the low half (the lower column index).
template <typename T>
__device__ __forceinline__ std::uint32_t pack(float lo, float hi) {
  static_assert(kIsHalf16<T>, "pack takes bfloat16 or float16");
  std::uint32_t bits;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    bits = *reinterpret_cast<std::uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    bits = *reinterpret_cast<std::uint32_t*>(&v);
  }
  return bits;
}

// The A fragment of k-step j from the accumulators of n-blocks 2j and 2j+1.
template <typename T>
__device__ __forceinline__ FragA pack_a(const FragC& left, const FragC& right) {
  return {{pack<T>(left.x[0], left.x[1]), pack<T>(left.x[2], left.x[3]), pack<T>(right.x[0], right.x[1]),
           pack<T>(right.x[2], right.x[3])}};
}

template <int kN>
__device__ __forceinline__ void zero(FragC (&c)[kN]) {
#pragma unroll
  for (int n = 0; n < kN; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) c[n].x[e] = 0.0f;
}

// 2^x with the hardware approximation (relative error ~2^-22); 2^-inf is 0.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace zt::cuda::mma
