#include "cuda/reduce.cuh"

#include "cuda/cuda_common.cuh"
#include "cuda/elementwise_dispatch.cuh"
#include "cuda/reduce_block.cuh"
#include "cuda/scratch_buffer.h"
#include "runtime/check.h"

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

}  // namespace

void sum_all(const void* x, void* out, DType dtype, std::int64_t n, float multiplier, cudaStream_t stream) {
  std::int64_t blocks = (n + kThreads * 8 - 1) / (kThreads * 8);
  blocks = blocks < 1 ? 1 : (blocks > kMaxPartials ? kMaxPartials : blocks);
  ScratchBuffer partial(static_cast<std::size_t>(blocks) * sizeof(float), stream);
  dispatch_float_type(dtype, "sum_all", [&]<typename T>() {
    partial_sums_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<const T*>(x), n,
                                                                                    partial.as<float>());
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

}  // namespace zt::cuda
