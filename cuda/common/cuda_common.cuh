// Small pieces every kernel file shares: element-type traits between the project's dtypes
// and CUDA's, float conversion for loads and stores, and grid sizing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace zt::cuda {

// Loads as float and stores from float, whatever the storage type.
template <typename T>
__device__ __forceinline__ float load_float(const T* p) {
  return static_cast<float>(*p);
}
template <typename T>
__device__ __forceinline__ void store_float(T* p, float value) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    *p = __float2bfloat16_rn(value);
  else if constexpr (std::is_same_v<T, __half>)
    *p = __float2half_rn(value);
  else
    *p = static_cast<T>(value);
}
// Rounds a float through T and back: reproduces the rounding torch applies when it stores
// an intermediate in T.
template <typename T>
__device__ __forceinline__ float round_through(float value) {
  if constexpr (std::is_same_v<T, float>)
    return value;
  else
    return static_cast<float>(static_cast<T>(value));
}

inline unsigned grid_size(std::int64_t work_items, int threads_per_block, unsigned max_blocks = 65535u * 8u) {
  std::int64_t blocks = (work_items + threads_per_block - 1) / threads_per_block;
  if (blocks < 1) blocks = 1;
  return blocks > max_blocks ? max_blocks : static_cast<unsigned>(blocks);
}

// Threads for one block working along a row: a multiple of the warp size, 32 to 256, and
// `long_row_threads` from 8192 elements on. A reduction's order follows the block size, so a
// kernel keeps its choice here for its results to keep their bits.
inline int row_block_threads(std::int64_t row_length, int long_row_threads = 256) {
  if (row_length >= 8192) return long_row_threads;
  if (row_length >= 256) return 256;
  return row_length <= 32 ? 32 : static_cast<int>((row_length + 31) / 32 * 32);
}

}  // namespace zt::cuda
