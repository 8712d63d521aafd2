// The 4-bit GEMV. A decode step reads each weight once, so the kernel is a stream over the
// packed codes: half a byte per weight, where dequantize-then-GEMM writes and reads back two
// more bytes of bfloat16 per weight.
//
// Wide path (K a multiple of 32, scale blocks of a multiple of 32 values, 16-byte aligned
// codes and x): a warp owns kRowsPerWarp whole rows of W and walks along K; each lane takes
// 32 values of each row per step with one 16-byte load (streaming: the codes are read once),
// so the 32 values lie in one scale block, whose scale the lane decodes once. The next step's
// codes and scale parts are loaded before the current ones are used, keeping two loads per row
// in flight; a double-quantized scale is decoded at use from the nested map in shared memory,
// so no load waits on another's result. x is
// read through the read-only cache in 16-byte vectors (every warp reads the same x; it stays in
// L1/L2), and each x vector feeds kRowsPerWarp rows of W. The code book sits in shared memory,
// its 16 entries in 16 banks, so a warp's lookups never conflict. The kernel is bound by the
// instructions each weight costs, so they are few: a 32-bit word's 8 codes become book offsets
// with two masks and one byte permute per code, and a byte's two values are rounded to the
// dtype by one paired conversion. Each lane sums its products
// in float; the warp then sums its lanes by shuffles. Other shapes take the value-per-lane
// path: the same arithmetic, one code at a time.
#include "cuda/quant4/gemv4.cuh"

#include <type_traits>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/quant4/packed4_decode.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerWarp = 2;
constexpr int kChunkValues = 32;  // one lane's 16 bytes of codes
constexpr int kMaxWarpsPerBlock = 4;
constexpr auto kMaxRows = static_cast<int>(kGemv4MaxRows);

// weight_value for the two codes of a byte, given as byte offsets into the book (4 * code).
template <typename T, typename W>
__device__ __forceinline__ void weight_pair(const float* book, unsigned first_offset, unsigned second_offset,
                                            float scale, float& first, float& second) {
  const char* bytes = reinterpret_cast<const char*>(book);
  first = __fmul_rn(*reinterpret_cast<const float*>(bytes + first_offset), scale);
  second = __fmul_rn(*reinterpret_cast<const float*>(bytes + second_offset), scale);
  if constexpr (!std::is_same_v<W, T> && !std::is_same_v<W, float>) round_pair<W>(first, second);
  round_pair<T>(first, second);
}

// The code book, and under double quantization the nested map, into shared memory.
__device__ __forceinline__ void load_tables(const Packed4Weight& w, float* book, float* nested_map) {
  if (threadIdx.x < 16) book[threadIdx.x] = code_book(w)[threadIdx.x];
  if (w.absmax == nullptr)
    for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) nested_map[i] = w.nested_map[i];
  __syncthreads();
}

// 8 consecutive x values, 16-byte aligned, as float.
template <typename T>
__device__ __forceinline__ void load_x8(const T* p, float (&out)[8]) {
  if constexpr (sizeof(T) == 4) {
    float half[4];
    load_vector_ro<T, 4>(p, half);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = half[i];
    load_vector_ro<T, 4>(p + 4, half);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[4 + i] = half[i];
  } else {
    load_vector_ro<T, 8>(p, out);
  }
}

// Each of acc summed over the warp's lanes (every lane ends with the totals).
template <int kCount>
__device__ __forceinline__ void warp_sum_each(float (&acc)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) acc[i] = warp_sum(acc[i]);
}

template <typename T>
__device__ __forceinline__ void store_row_sum(const Gemv4Args& a, int m, std::int64_t n, float sum) {
  if (a.bias != nullptr) sum += load_float(static_cast<const T*>(a.bias) + n);
  store_float(static_cast<T*>(a.y) + m * a.out_features + n, sum);
}

// One lane's step on its warp's rows: 32 codes of each and what their scales are made of.
struct Chunk {
  uint4 codes[kRowsPerWarp];
  ScaleParts scale[kRowsPerWarp];
};

__device__ __forceinline__ Chunk load_chunk(const Packed4Weight& w, const std::int64_t (&row_start)[kRowsPerWarp],
                                            std::int64_t chunk) {
  Chunk c;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const std::int64_t first = row_start[r] + chunk * kChunkValues;
    c.codes[r] = __ldcs(reinterpret_cast<const uint4*>(w.packed + first / 2));
    c.scale[r] = load_scale_parts(w, first / w.blocksize);
  }
  return c;
}

template <typename T, typename W, int kRows>
__device__ __forceinline__ void accumulate(const Packed4Weight& pw, const float* book, const float* nested_map,
                                           const Chunk& c, const T* x, std::int64_t k_stride, int rows,
                                           float (&acc)[kRowsPerWarp][kRows]) {
  float scale[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) scale[r] = decode_scale(pw, c.scale[r], nested_map);
#pragma unroll
  for (int word = 0; word < 4; ++word) {
    float w[kRowsPerWarp][8];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      // 4 * each byte's first (high) and second (low) code, byte by byte: the book offsets.
      const unsigned codes = (&c.codes[r].x)[word];
      const unsigned firsts = (codes >> 2) & 0x3C3C3C3Cu;
      const unsigned seconds = (codes << 2) & 0x3C3C3C3Cu;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        weight_pair<T, W>(book, __byte_perm(firsts, 0, 0x4440 | b), __byte_perm(seconds, 0, 0x4440 | b), scale[r],
                          w[r][2 * b], w[r][2 * b + 1]);
    }
#pragma unroll
    for (int m = 0; m < kRows; ++m) {
      if (m >= rows) break;
      float xv[8];
      load_x8(x + m * k_stride + word * 8, xv);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[r][m] = fmaf(w[r][j], xv[j], acc[r][m]);
    }
  }
}

template <typename T, typename W, int kRows>
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp) gemv_4bit_wide_kernel(Gemv4Args a) {
  __shared__ float book[16];
  __shared__ float nested_map[256];
  load_tables(a.weight, book, nested_map);
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t first_row =
      (static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp) * kRowsPerWarp;
  if (first_row >= a.out_features) return;
  const std::int64_t k = a.in_features;
  // A warp holding the last, odd row reads it twice and writes it once.
  std::int64_t row_start[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) row_start[r] = min(first_row + r, a.out_features - 1) * k;
  const int rows = static_cast<int>(a.rows);
  const T* x = static_cast<const T*>(a.x);
  float acc[kRowsPerWarp][kRows] = {};
  const std::int64_t chunks = k / kChunkValues;
  Chunk next{};
  if (lane < chunks) next = load_chunk(a.weight, row_start, lane);
  for (std::int64_t chunk = lane; chunk < chunks; chunk += kWarp) {
    const Chunk current = next;
    if (chunk + kWarp < chunks) next = load_chunk(a.weight, row_start, chunk + kWarp);
    accumulate<T, W, kRows>(a.weight, book, nested_map, current, x + chunk * kChunkValues, k, rows, acc);
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) warp_sum_each(acc[r]);
  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
    if (first_row + r < a.out_features)
#pragma unroll
      for (int m = 0; m < kRows; ++m)
        if (m < rows) store_row_sum<T>(a, m, first_row + r, acc[r][m]);
}

// Any shape: a warp per row of W, a code per lane and step.
template <typename T, typename W>
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp) gemv_4bit_any_kernel(Gemv4Args a) {
  __shared__ float book[16];
  __shared__ float nested_map[256];
  load_tables(a.weight, book, nested_map);
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (n >= a.out_features) return;
  const std::int64_t k = a.in_features;
  const int rows = static_cast<int>(a.rows);
  const T* x = static_cast<const T*>(a.x);
  const Packed4Weight& w = a.weight;
  float acc[kMaxRows] = {};
  for (std::int64_t i = lane; i < k; i += kWarp) {
    const std::int64_t flat = n * k + i;
    const unsigned byte = w.packed[flat / 2];
    const unsigned code = flat % 2 == 0 ? byte >> 4 : byte & 0x0Fu;
    const float scale = decode_scale(w, load_scale_parts(w, flat / w.blocksize), nested_map);
    const float value = weight_value<T, W>(book, code, scale);
#pragma unroll
    for (int m = 0; m < kMaxRows; ++m)
      if (m < rows) acc[m] = fmaf(value, load_float(x + m * k + i), acc[m]);
  }
  warp_sum_each(acc);
  if (lane != 0) return;
#pragma unroll
  for (int m = 0; m < kMaxRows; ++m)
    if (m < rows) store_row_sum<T>(a, m, n, acc[m]);
}

bool wide_path_fits(const Gemv4Args& a) {
  return a.in_features % kChunkValues == 0 && a.weight.blocksize % kChunkValues == 0 &&
         reinterpret_cast<std::uintptr_t>(a.weight.packed) % 16 == 0 && reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0;
}

// Fewer warps per block for a short weight, so that its rows still spread over the SMs.
int warps_per_block(std::int64_t warps) { return warps >= 1024 ? 4 : warps >= 512 ? 2 : 1; }

// Every warp's rows get a block of their own (no grid-stride loop).
unsigned blocks(std::int64_t warps, int per_block) {
  const std::int64_t count = (warps + per_block - 1) / per_block;
  ZT_REQUIRE(count <= 0x7FFFFFFF, "gemv_4bit: " + std::to_string(warps) + " warps of rows do not fit one grid");
  return static_cast<unsigned>(count);
}

template <typename T, typename W>
void launch(const Gemv4Args& a, cudaStream_t stream) {
  if (!wide_path_fits(a)) {
    const int warps = warps_per_block(a.out_features);
    gemv_4bit_any_kernel<T, W><<<blocks(a.out_features, warps), warps * kWarp, 0, stream>>>(a);
    return;
  }
  const std::int64_t needed = (a.out_features + kRowsPerWarp - 1) / kRowsPerWarp;
  const int warps = warps_per_block(needed);
  const unsigned grid = blocks(needed, warps);
  const int threads = warps * kWarp;
  if (a.rows <= 1)
    gemv_4bit_wide_kernel<T, W, 1><<<grid, threads, 0, stream>>>(a);
  else if (a.rows <= 2)
    gemv_4bit_wide_kernel<T, W, 2><<<grid, threads, 0, stream>>>(a);
  else if (a.rows <= 4)
    gemv_4bit_wide_kernel<T, W, 4><<<grid, threads, 0, stream>>>(a);
  else
    gemv_4bit_wide_kernel<T, W, kMaxRows><<<grid, threads, 0, stream>>>(a);
}

}  // namespace

void gemv_4bit(const Gemv4Args& args, cudaStream_t stream) {
  if (args.out_features == 0) return;
  ZT_REQUIRE(args.rows >= 1 && args.rows <= kGemv4MaxRows,
             "gemv_4bit: " + std::to_string(args.rows) + " rows; the kernel takes 1 to 8");
  require_packed4_matrix(args.weight, args.in_features, args.out_features, "gemv_4bit");
  ZT_REQUIRE(args.x != nullptr && args.y != nullptr, "gemv_4bit: x and y must be given");
  dispatch_float_type(args.dtype, "gemv_4bit", [&]<typename T>() {
    dispatch_float_type(args.weight_dtype, "gemv_4bit (weight dtype)",
                        [&]<typename W>() { launch<T, W>(args, stream); });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
