#include "cuda/reduce/softmax.cuh"

#include <cmath>
#include <string>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

template <typename T>
__global__ void softmax_forward_kernel(const T* x, T* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * cols;
    T* out = y + row * cols;
    float max = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) max = fmaxf(max, load_float(in + j));
    max = block_reduce(max, -INFINITY, MaxOp{});
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(load_float(in + j) - max);
    float inverse = 1.0f / block_reduce(sum, 0.0f, SumOp{});
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      store_float(out + j, expf(load_float(in + j) - max) * inverse);
  }
}

template <typename T>
__global__ void softmax_backward_kernel(const T* grad_y, const T* y, T* grad_x, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* dy = grad_y + row * cols;
    const T* out = y + row * cols;
    float dot = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += load_float(dy + j) * load_float(out + j);
    dot = block_reduce(dot, 0.0f, SumOp{});
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      store_float(grad_x + row * cols + j, load_float(out + j) * (load_float(dy + j) - dot));
  }
}

}  // namespace

void softmax_forward(const void* x, void* y, DType dtype, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch_float_type(dtype, "softmax", [&]<typename T>() {
    softmax_forward_kernel<<<grid_size(rows, 1), row_block_threads(cols, 1024), 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), rows, cols);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void softmax_backward(const void* grad_y, const void* y, void* grad_x, DType dtype, std::int64_t rows,
                      std::int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch_float_type(dtype, "softmax", [&]<typename T>() {
    softmax_backward_kernel<<<grid_size(rows, 1), row_block_threads(cols, 1024), 0, stream>>>(
        static_cast<const T*>(grad_y), static_cast<const T*>(y), static_cast<T*>(grad_x), rows, cols);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
