// Shared-memory tiles of 16-bit elements for the tensor-core kernels, and the asynchronous
// copies (cp.async) that fill them from global memory without passing through registers.
//
// A tile is kRows rows of kCols elements, addressed in 16-byte chunks of 8 elements, the unit
// of both cp.async and ldmatrix. ldmatrix reads one chunk from each of 8 consecutive rows;
// with rows a multiple of 128 bytes long those chunks would all fall in the same four banks.
// Such tiles XOR the chunk index with row % 8 (a swizzle: no wasted bytes); other widths pad
// each row to an odd number of chunks, which spreads 8 consecutive rows over all banks too.
#pragma once

#include <cstdint>

#include "cuda/common/mma.cuh"

namespace zt::cuda::tile {

template <int kRowsT, int kColsT>
struct SmemTile {
  static constexpr int kRows = kRowsT;
  static constexpr int kCols = kColsT;
  static constexpr int kChunks = kCols / 8;
  static constexpr bool kSwizzled = kChunks % 8 == 0;
  static constexpr int kPitchChunks = kSwizzled || kChunks % 2 == 1 ? kChunks : kChunks + 1;
  static constexpr int kBytes = kRows * kPitchChunks * 16;
  static_assert(kCols % 8 == 0, "a tile row is a whole number of 16-byte chunks");

  // Byte offset of chunk c (elements 8c .. 8c+7) of row r.
  __device__ __forceinline__ static std::uint32_t offset(int r, int c) {
    return static_cast<std::uint32_t>((r * kPitchChunks + (kSwizzled ? (c ^ (r & 7)) : c)) * 16);
  }
  // Byte offset of element `col` of row r.
  __device__ __forceinline__ static std::uint32_t element_offset(int r, int col) {
    return offset(r, col / 8) + static_cast<std::uint32_t>((col % 8) * 2);
  }
};

// Copies `bytes` (4, 8 or 16) to shared memory, or writes zeros there when !valid; `src` must
// point into mapped memory either way.
template <int kBytes>
__device__ __forceinline__ void cp_async(std::uint32_t dst, const void* src, bool valid) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
  const int src_bytes = valid ? kBytes : 0;
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(kBytes), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Issues the copies of a whole tile: row r < valid_rows from row_pointer(r) (kCols elements,
// 16-byte aligned), rows past it zero-filled so masked rows hold exact zeros.
template <typename Tile, int kThreads, typename T, typename RowPointer>
__device__ __forceinline__ void load_tile_async(std::uint32_t tile, int valid_rows, RowPointer row_pointer,
                                                const T* any_valid) {
  constexpr int kTotal = Tile::kRows * Tile::kChunks;
#pragma unroll 4
  for (int i = threadIdx.x; i < kTotal; i += kThreads) {
    const int r = i / Tile::kChunks, c = i - r * Tile::kChunks;
    const bool valid = r < valid_rows;
    const T* src = valid ? row_pointer(r) + c * 8 : any_valid;
    cp_async<16>(tile + Tile::offset(r, c), src, valid);
  }
}

// Writes rows row0 .. row0+15 of a tile (a warp's staging area) to global memory, 16 bytes a
// lane at a time; rows with !row_pointer(r) are skipped.
template <typename Tile, typename T, typename RowPointer>
__device__ __forceinline__ void store_warp_rows(const unsigned char* tile, int row0, RowPointer row_pointer) {
  constexpr int kTotal = 16 * Tile::kChunks;
  const int lane = threadIdx.x % 32;
  for (int i = lane; i < kTotal; i += 32) {
    const int r = row0 + i / Tile::kChunks, c = i % Tile::kChunks;
    T* dst = row_pointer(r);
    if (dst) *reinterpret_cast<uint4*>(dst + c * 8) = *reinterpret_cast<const uint4*>(tile + Tile::offset(r, c));
  }
}

// Stores a warp's accumulators (16 rows at row0, 8 columns per n-block) into a tile as T,
// scaled by factor[0] in the lane's first row (group) and factor[1] in its second (group + 8).
template <typename Tile, typename T, int kN8>
__device__ __forceinline__ void store_accumulators(unsigned char* tile, int row0, const mma::FragC (&acc)[kN8],
                                                   const float (&factor)[2]) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int n = 0; n < kN8; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = row0 + group + 8 * half;
      *reinterpret_cast<std::uint32_t*>(tile + Tile::element_offset(r, 8 * n + 2 * quad)) =
          mma::pack<T>(acc[n].x[2 * half] * factor[half], acc[n].x[2 * half + 1] * factor[half]);
    }
}

}  // namespace zt::cuda::tile
