// Pieces of the simple attention kernels: the block shape, shared-memory tile loads, the
// shuffled row accumulation and lane-wise row stores, and the host-side launch and dispatch
// over dtype and head_dim (the packed layout's addressing is attention_layout.cuh's).
//
// Every kernel runs 4 warps. A block owns kBlockRows rows (4 per warp: queries in the forward
// and dQ kernels, keys in the dK/dV kernel) and streams the other side through shared memory
// kStreamRows = 32 rows at a time, one per lane: each lane computes its streamed row's dot
// products with the warp's 4 owned rows, then the warp shuffles the per-row weights to
// accumulate head_dim-wide results, lane l holding columns l, l + 32, ... in registers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/attention/attention_layout.cuh"
#include "cuda/attention/simple/attention.cuh"
#include "cuda/common/cuda_common.cuh"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda::attention_detail {

inline constexpr int kLanes = 32;
inline constexpr int kWarps = 4;
inline constexpr int kThreads = kLanes * kWarps;
inline constexpr int kRowsPerWarp = 4;
inline constexpr int kBlockRows = kWarps * kRowsPerWarp;
inline constexpr int kStreamRows = kLanes;
inline constexpr unsigned kFullMask = 0xffffffffu;

// The query tile of a forward or dQ block: kBlockRows queries from q0 of head h in sequence b.
struct QueryTile {
  int b, h, q0;
  Sequence seq;
};

__device__ __forceinline__ QueryTile query_tile(const std::int32_t* cu_seqlens) {
  const int b = blockIdx.z;
  return {b, static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x * kBlockRows), sequence(cu_seqlens, b)};
}

// A thread's lane and the first of the kRowsPerWarp rows its warp owns.
struct WarpRows {
  int lane, row0;
};

__device__ __forceinline__ WarpRows warp_rows() {
  const int warp = threadIdx.x / kLanes;
  return {static_cast<int>(threadIdx.x % kLanes), warp * kRowsPerWarp};
}

// Copies rows [0, valid) into a shared float tile with `pitch` floats per row and zeroes rows
// [valid, rows), so masked rows contribute exact zeros rather than stale values.
template <typename T, typename RowPointer>
__device__ void load_tile(float* tile, int pitch, int rows, int valid, int head_dim, RowPointer row_pointer) {
  for (int index = threadIdx.x; index < rows * head_dim; index += blockDim.x) {
    const int r = index / head_dim, c = index - r * head_dim;
    tile[r * pitch + c] = r < valid ? load_float(row_pointer(r) + c) : 0.0f;
  }
}

// Copies keys k0 .. k0 + valid of kv head g (K into k_tile, V into v_tile, rows k_pitch and
// v_pitch floats apart) and zeroes rows valid .. rows of both.
template <typename T>
__device__ __forceinline__ void load_keys(float* k_tile, int k_pitch, float* v_tile, int v_pitch, int rows, int valid,
                                          const Operands<T>& x, const AttentionDims& dims, Sequence seq, int b, int k0,
                                          int g) {
  load_tile<T>(k_tile, k_pitch, rows, valid, dims.head_dim,
               [&](int r) { return key_row(x.k, x.prefix_k, dims, seq, b, k0 + r, g); });
  load_tile<T>(v_tile, v_pitch, rows, valid, dims.head_dim,
               [&](int r) { return key_row(x.v, x.prefix_v, dims, seq, b, k0 + r, g); });
}

// acc (a lane's columns of one owned row) += Σ_j weight_j · tile row j over the kStreamRows
// streamed rows, weight_j being lane j's `weight`, shared by shuffle.
template <int kChunks>
__device__ __forceinline__ void accumulate_rows(float (&acc)[kChunks], float weight, const float* tile, int pitch,
                                                int lane, int dim) {
  for (int j = 0; j < kStreamRows; ++j) {
    const float weight_j = __shfl_sync(kFullMask, weight, j);
    const float* row = tile + j * pitch;
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (c * kLanes + lane < dim) acc[c] += weight_j * row[c * kLanes + lane];
  }
}

// Stores a lane's columns (lane, lane + 32, ...) of one head_dim-wide row, each accumulator
// times `factor`.
template <int kChunks, typename T>
__device__ __forceinline__ void store_lane_columns(T* row, const float (&acc)[kChunks], float factor, int lane,
                                                   int dim) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if (c * kLanes + lane < dim) store_float(row + c * kLanes + lane, acc[c] * factor);
}

inline int ceil_div(std::int64_t a, int b) { return static_cast<int>((a + b - 1) / b); }

// Launches a grid of (tile of kBlockRows of `rows`, head, sequence) blocks with `bytes` of
// dynamic shared memory.
template <typename Kernel, typename... Args>
void launch_tiles(Kernel kernel, std::size_t bytes, std::int64_t rows, int heads, int batch, cudaStream_t stream,
                  Args... args) {
  allow_shared_bytes(kernel, bytes);
  const dim3 grid(ceil_div(rows, kBlockRows), heads, batch);
  kernel<<<grid, kThreads, bytes, stream>>>(args...);
  ZT_CUDA_CHECK(cudaGetLastError());
}

// Calls f.template operator()<T, kChunks>() with T the device element type and kChunks the
// number of 32-column chunks a lane keeps in registers (head_dim up to 64, 128 or 256).
template <typename F>
void dispatch_attention(DType dtype, int head_dim, F&& f) {
  auto with_type = [&]<typename T>() {
    if (head_dim <= 64)
      f.template operator()<T, 2>();
    else if (head_dim <= 128)
      f.template operator()<T, 4>();
    else
      f.template operator()<T, 8>();
  };
  dispatch_float_type(dtype, "attention kernels", with_type);
}

}  // namespace zt::cuda::attention_detail
