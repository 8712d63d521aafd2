// Warp-level matrix products on mma.sync fragments: one warp computes a 16-row slab of a
// product whose A operand comes from registers or shared memory (a functor returns the A
// fragment of each 16-wide k-step) and whose B operand is read from a shared-memory tile with
// ldmatrix, plain for a tile stored [n][k] (C = A·Bᵀ, e.g. Q·Kᵀ) and transposed for one stored
// [k][n] (C = A·B, e.g. P·V). Offsets follow the ldmatrix matrix order in mma.cuh.
#pragma once

#include <cstdint>

#include "cuda/common/mma.cuh"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/tile_smem.cuh"

namespace zt::cuda::mma {

// Lane roles for ldmatrix.x4: lanes 8i..8i+7 address matrix i, row lane % 8 of it.
struct LdmatrixLane {
  int matrix, row;
  __device__ __forceinline__ LdmatrixLane() : matrix((threadIdx.x % 32) / 8), row(threadIdx.x % 8) {}
};

// A fragment of k-step kk for the 16 rows at row0 of a tile stored [m][k].
template <typename Tile>
__device__ __forceinline__ FragA load_a(std::uint32_t tile, int row0, int kk) {
  const LdmatrixLane l;
  FragA a;
  ldmatrix_x4(a.x, tile + Tile::offset(row0 + l.row + (l.matrix & 1) * 8, 2 * kk + (l.matrix >> 1)));
  return a;
}

// A fragment of k-step kk for rows m0 .. m0+15 of A, from a tile holding Aᵀ ([k][m]).
template <typename Tile>
__device__ __forceinline__ FragA load_a_trans(std::uint32_t tile, int m0, int kk) {
  const LdmatrixLane l;
  FragA a;
  ldmatrix_x4_trans(a.x, tile + Tile::offset(16 * kk + l.row + (l.matrix >> 1) * 8, m0 / 8 + (l.matrix & 1)));
  return a;
}

// acc[16 x 8·kN8] += A · B over kK16 k-steps of 16, A's fragment of step kk from a_of(kk) and
// B's two n-blocks 2·np and 2·np + 1 of step kk loaded by load_b(b, kk, np).
template <typename T, int kK16, int kN8, typename AOf, typename LoadB>
__device__ __forceinline__ void gemm(FragC (&acc)[kN8], AOf&& a_of, LoadB&& load_b) {
  static_assert(kN8 % 2 == 0, "B is read two n-blocks at a time");
#pragma unroll
  for (int kk = 0; kk < kK16; ++kk) {
    const FragA a = a_of(kk);
#pragma unroll
    for (int np = 0; np < kN8 / 2; ++np) {
      std::uint32_t b[4];
      load_b(b, kk, np);
      mma_16816<T>(acc[2 * np], a, b[0], b[1]);
      mma_16816<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// acc[16 x 8·kN8] += A[16 x 16·kK16] · Bᵀ, B stored [n][k] from row n0 and column 0.
template <typename T, typename Tile, int kK16, int kN8, typename AOf>
__device__ __forceinline__ void gemm_abt(FragC (&acc)[kN8], AOf&& a_of, std::uint32_t tile, int n0) {
  const LdmatrixLane l;
  const int row = n0 + l.row + (l.matrix >> 1) * 8;
  gemm<T, kK16>(acc, a_of, [&](std::uint32_t(&b)[4], int kk, int np) {
    ldmatrix_x4(b, tile + Tile::offset(row + 16 * np, 2 * kk + (l.matrix & 1)));
  });
}

// acc[16 x 8·kN8] += A[16 x 16·kK16] · B, B stored [k][n] from row k0 and column n0 (a
// multiple of 8).
template <typename T, typename Tile, int kK16, int kN8, typename AOf>
__device__ __forceinline__ void gemm_ab(FragC (&acc)[kN8], AOf&& a_of, std::uint32_t tile, int k0, int n0) {
  const LdmatrixLane l;
  const int row = k0 + l.row + (l.matrix & 1) * 8, chunk = n0 / 8 + (l.matrix >> 1);
  gemm<T, kK16>(acc, a_of, [&](std::uint32_t(&b)[4], int kk, int np) {
    ldmatrix_x4_trans(b, tile + Tile::offset(row + 16 * kk, chunk + 2 * np));
  });
}

// The accumulators of a 16 x 8·kN8 product as the A operand (16 x 8·kN8, k-steps of 16) of the next.
template <typename T, int kN8>
__device__ __forceinline__ void to_a(FragA (&a)[kN8 / 2], const FragC (&c)[kN8]) {
#pragma unroll
  for (int kk = 0; kk < kN8 / 2; ++kk) a[kk] = pack_a<T>(c[2 * kk], c[2 * kk + 1]);
}

}  // namespace zt::cuda::mma
