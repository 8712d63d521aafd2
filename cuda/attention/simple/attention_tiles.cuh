// Pieces the attention kernels share: the block shape, warp reductions, the packed layout's
// addressing, shared-memory tile loads, the shuffled row accumulation and lane-wise row
// stores, and the host-side launch and dispatch over dtype and head_dim.
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

#include "cuda/attention/simple/attention.cuh"
#include "cuda/common/cuda_common.cuh"
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

__device__ __forceinline__ float warp_max(float value) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset >>= 1)
    value = fmaxf(value, __shfl_xor_sync(kFullMask, value, offset));
  return value;
}

// Butterfly sum: every lane adds the same two operands at each step, so all lanes agree bitwise.
__device__ __forceinline__ float warp_sum(float value) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset >>= 1) value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

struct Sequence {
  std::int64_t start;
  int len;
};

__device__ __forceinline__ Sequence sequence(const std::int32_t* cu_seqlens, int b) {
  return {cu_seqlens[b], cu_seqlens[b + 1] - cu_seqlens[b]};
}

// The inputs as T.
template <typename T>
struct Operands {
  const T *q, *k, *v, *prefix_k, *prefix_v;
  __device__ explicit Operands(const AttentionInputs& in)
      : q(static_cast<const T*>(in.q)),
        k(static_cast<const T*>(in.k)),
        v(static_cast<const T*>(in.v)),
        prefix_k(static_cast<const T*>(in.prefix_k)),
        prefix_v(static_cast<const T*>(in.prefix_v)) {}
};

// The query tile of a forward or dQ block: kBlockRows queries from q0 of head h in sequence b.
struct QueryTile {
  int b, h, q0;
  Sequence seq;
};

__device__ __forceinline__ QueryTile query_tile(const std::int32_t* cu_seqlens) {
  const int b = blockIdx.z;
  return {b, static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x * kBlockRows), sequence(cu_seqlens, b)};
}

// The kv head query head h reads (grouped-query attention).
__device__ __forceinline__ int kv_head(const AttentionDims& dims, int h) {
  return h / (dims.num_heads / dims.num_kv_heads);
}

// A thread's lane and the first of the kRowsPerWarp rows its warp owns.
struct WarpRows {
  int lane, row0;
};

__device__ __forceinline__ WarpRows warp_rows() {
  const int warp = threadIdx.x / kLanes;
  return {static_cast<int>(threadIdx.x % kLanes), warp * kRowsPerWarp};
}

// Row (token, head) of a [total_tokens, heads, head_dim] array.
template <typename P>
__device__ __forceinline__ P token_row(P base, std::int64_t token, int heads, int head, int head_dim) {
  return base + (token * heads + head) * head_dim;
}

// Unified key j of sequence b for kv head g: the prefix's rows first, then the sequence's tokens.
template <typename P>
__device__ __forceinline__ P key_row(P own, P prefix, const AttentionDims& dims, Sequence seq, int b, int j, int g) {
  if (j < dims.prefix_len)
    return prefix + ((static_cast<std::int64_t>(b) * dims.prefix_len + j) * dims.num_kv_heads + g) * dims.head_dim;
  return token_row(own, seq.start + (j - dims.prefix_len), dims.num_kv_heads, g, dims.head_dim);
}

// Whether the query at local position i sees unified key j; out-of-range rows see nothing.
__device__ __forceinline__ bool visible(const AttentionDims& dims, int len, int i, int j) {
  return i < len && j < dims.prefix_len + len && (!dims.causal || j < dims.prefix_len || j - dims.prefix_len <= i);
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

// Allows a kernel more than the default 48 KiB of dynamic shared memory when it needs it.
template <typename Kernel>
void allow_shared_bytes(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
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
  switch (dtype) {
    case DType::kF32:
      return with_type.template operator()<float>();
    case DType::kBF16:
      return with_type.template operator()<__nv_bfloat16>();
    case DType::kF16:
      return with_type.template operator()<__half>();
    default:
      throw Error(std::string("attention kernels take float32, bfloat16 or float16, got ") + dtype_name(dtype));
  }
}

inline void check_dims(const AttentionDims& dims) {
  ZT_REQUIRE(dims.head_dim >= 1 && dims.head_dim <= 256,
             "attention kernels: head_dim " + std::to_string(dims.head_dim) + " must be in 1 .. 256");
  ZT_REQUIRE(dims.num_kv_heads >= 1 && dims.num_heads % dims.num_kv_heads == 0,
             "attention kernels: num_heads " + std::to_string(dims.num_heads) + " must be a multiple of num_kv_heads " +
                 std::to_string(dims.num_kv_heads));
}

}  // namespace zt::cuda::attention_detail
