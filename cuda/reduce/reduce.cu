#include "cuda/reduce/reduce.cuh"

#include <algorithm>
#include <climits>
#include <optional>
#include <string>
#include <type_traits>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/scratch_buffer.h"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/reduce/argmax_order.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxPartials = 1024;

// Pass 1 of sum_all: block b sums a grid-strided share of x into partial[b].
template <typename T>
__global__ void partial_sums_kernel(const T* x, std::int64_t n, float* partial) {
  float sum = 0.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    sum += load_float(x + i);
  sum = block_sum(sum);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// Pass 2: one block adds the partials.
template <typename T>
__global__ void finish_sum_kernel(const float* partial, std::int64_t count, T* out, float multiplier) {
  float sum = 0.0f;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) store_float(out, sum * multiplier);
}

// Reducing the innermost dim: one block per output, the row read contiguously.
template <typename T>
__global__ void row_sums_kernel(const T* x, T* out, std::int64_t rows, std::int64_t extent, float multiplier) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float sum = 0.0f;
    for (std::int64_t e = threadIdx.x; e < extent; e += blockDim.x) sum += load_float(x + row * extent + e);
    sum = block_sum(sum);
    if (threadIdx.x == 0) store_float(out + row, sum * multiplier);
  }
}

// Reducing a middle or leading dim: one thread per output; neighbouring threads read
// neighbouring elements of each slice.
template <typename T>
__global__ void strided_sums_kernel(const T* x, T* out, std::int64_t outer, std::int64_t extent, std::int64_t inner,
                                    float multiplier) {
  std::int64_t outputs = outer * inner;
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < outputs;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const T* base = x + (j / inner) * extent * inner + j % inner;
    float sum = 0.0f;
    for (std::int64_t e = 0; e < extent; ++e) sum += load_float(base + e * inner);
    store_float(out + j, sum * multiplier);
  }
}

// ---- argmax over rows ----

template <typename V>
struct Candidate {
  V value;
  int index;
};

template <typename V>
__device__ __forceinline__ Candidate<V> shfl_xor(Candidate<V> c, int offset) {
  return {zt::cuda::shfl_xor(c.value, offset), zt::cuda::shfl_xor(c.index, offset)};
}

// The candidate `precedes` puts first, for block_reduce.
struct FirstMax {
  template <typename V>
  __device__ Candidate<V> operator()(Candidate<V> a, Candidate<V> b) const {
    keep_first(a.value, a.index, b.value, b.index);
    return a;
  }
};

// Every thread of the block calls it and gets the block's first maximum.
template <typename V>
__device__ Candidate<V> block_first_max(Candidate<V> mine) {
  return block_reduce(mine, Candidate<V>{V(-INFINITY), INT_MAX}, FirstMax{});
}

// Blocks of (row, part): part p of a row scans columns [p * part_cols, (p + 1) * part_cols).
// One part a row writes the row's index; several write their first maximum to `partial`,
// which argmax_merge_kernel reduces. A row split over parts gives the same index: the order
// is total (argmax_order.cuh). V: the comparison type (double for float64, float
// otherwise); kW elements per load (16 bytes, or 1 where rows are not 16-byte aligned).
template <typename T, typename V, int kW>
__global__ void argmax_rows_kernel(const T* x, std::int64_t* out, Candidate<V>* partial, std::int64_t rows,
                                   std::int64_t cols, std::int64_t row_stride, int parts, std::int64_t part_cols) {
  for (std::int64_t b = blockIdx.x; b < rows * parts; b += gridDim.x) {
    const std::int64_t row = b / parts, begin = (b % parts) * part_cols;
    const std::int64_t end = begin + part_cols < cols ? begin + part_cols : cols;
    const T* p = x + row * row_stride;
    Candidate<V> best{V(-INFINITY), INT_MAX};
    for (std::int64_t c = begin + static_cast<std::int64_t>(threadIdx.x) * kW; c < end;
         c += static_cast<std::int64_t>(blockDim.x) * kW) {
      const Packed<T, kW> packed = *reinterpret_cast<const Packed<T, kW>*>(p + c);
#pragma unroll
      for (int e = 0; e < kW; ++e)
        keep_first(best.value, best.index, static_cast<V>(packed.v[e]), static_cast<int>(c) + e);
    }
    best = block_first_max(best);
    if (threadIdx.x != 0) continue;
    if (parts == 1)
      out[row] = best.index;
    else
      partial[b] = best;
  }
}

template <typename V>
__global__ void argmax_merge_kernel(const Candidate<V>* partial, std::int64_t* out, std::int64_t rows, int parts) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    Candidate<V> best{V(-INFINITY), INT_MAX};
    for (int part = threadIdx.x; part < parts; part += blockDim.x) {
      const Candidate<V> c = partial[row * parts + part];
      keep_first(best.value, best.index, c.value, c.index);
    }
    best = block_first_max(best);
    if (threadIdx.x == 0) out[row] = best.index;
  }
}

// A few rows of a long vocabulary (a decode step's greedy choice: 1 to 64 rows of 152k) are
// split into parts so about kArgmaxBlocks blocks scan them, each part at least
// kMinPartColumns wide; many rows take a block each.
constexpr std::int64_t kArgmaxBlocks = 256;
constexpr std::int64_t kMinPartColumns = 8192;

template <typename T, typename V>
void launch_argmax(const void* x, std::int64_t* out, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                   cudaStream_t stream) {
  constexpr int kW = kVectorWidth<T>;
  const bool vector = is_aligned(x, 16) && cols % kW == 0 && row_stride % kW == 0;
  const std::int64_t wanted = (kArgmaxBlocks + rows - 1) / rows, widest = cols / kMinPartColumns;
  const int parts = static_cast<int>(std::max<std::int64_t>(1, std::min(wanted, widest)));
  std::int64_t part_cols = (cols + parts - 1) / parts;
  part_cols = (part_cols + kW - 1) / kW * kW;  // whole vectors, so every part's loads stay aligned
  const int threads = row_block_threads(part_cols, 512);
  const unsigned blocks = grid_size(rows * parts, 1);
  const T* data = static_cast<const T*>(x);
  std::optional<ScratchBuffer> scratch;
  if (parts > 1) scratch.emplace(static_cast<std::size_t>(rows * parts) * sizeof(Candidate<V>), stream);
  Candidate<V>* partial = scratch ? scratch->as<Candidate<V>>() : nullptr;
  if (vector)
    argmax_rows_kernel<T, V, kW>
        <<<blocks, threads, 0, stream>>>(data, out, partial, rows, cols, row_stride, parts, part_cols);
  else
    argmax_rows_kernel<T, V, 1>
        <<<blocks, threads, 0, stream>>>(data, out, partial, rows, cols, row_stride, parts, part_cols);
  if (parts > 1) argmax_merge_kernel<V><<<grid_size(rows, 1), 32, 0, stream>>>(partial, out, rows, parts);
}

}  // namespace

void sum_all(const void* x, void* out, DType dtype, std::int64_t n, float multiplier, cudaStream_t stream) {
  std::int64_t blocks = (n + kThreads * 8 - 1) / (kThreads * 8);
  blocks = blocks < 1 ? 1 : (blocks > kMaxPartials ? kMaxPartials : blocks);
  ScratchBuffer partial(static_cast<std::size_t>(blocks) * sizeof(float), stream);
  dispatch_float_type(dtype, "sum_all", [&]<typename T>() {
    partial_sums_kernel<T>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<const T*>(x), n, partial.as<float>());
    ZT_CUDA_CHECK(cudaGetLastError());
    finish_sum_kernel<T><<<1, kThreads, 0, stream>>>(partial.as<float>(), blocks, static_cast<T*>(out), multiplier);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void sum_dim(const void* x, void* out, DType dtype, std::int64_t outer, std::int64_t extent, std::int64_t inner,
             float multiplier, cudaStream_t stream) {
  std::int64_t outputs = outer * inner;
  if (outputs == 0) return;
  dispatch_float_type(dtype, "sum_dim", [&]<typename T>() {
    if (inner == 1)
      row_sums_kernel<T><<<grid_size(outer, 1), row_block_threads(extent), 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(out), outer, extent, multiplier);
    else
      strided_sums_kernel<T><<<grid_size(outputs, kThreads), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(out), outer, extent, inner, multiplier);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void argmax_rows(const void* x, std::int64_t* out, DType dtype, std::int64_t rows, std::int64_t cols,
                 std::int64_t row_stride, cudaStream_t stream) {
  if (rows == 0) return;
  ZT_REQUIRE(cols >= 1 && cols < INT_MAX,
             "argmax_rows kernel: cols " + std::to_string(cols) + " must be in 1 .. " + std::to_string(INT_MAX - 1));
  dispatch_float_type<GpuFloatTypesWithF64>(dtype, "argmax_rows", [&]<typename T>() {
    using V = std::conditional_t<std::is_same_v<T, double>, double, float>;  // the comparison type
    launch_argmax<T, V>(x, out, rows, cols, row_stride, stream);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
