#include "cuda/elementwise/tanh.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

template <typename T>
__global__ void tanh_kernel(const T* x, T* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store_float(out + i, tanhf(load_float(x + i)));
}

template <typename T>
__global__ void tanh_backward_kernel(const T* grad_out, const T* out, T* grad_in, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float y = load_float(out + i);
    store_float(grad_in + i, load_float(grad_out + i) * (1.0f - y * y));
  }
}

}  // namespace

void tanh_forward(const void* x, void* out, DType dtype, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(dtype, "tanh_forward", [&]<typename T>() {
    tanh_kernel<T><<<grid_size(n, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), n);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void tanh_backward(const void* grad_out, const void* out, void* grad_in, DType dtype, std::int64_t n,
                   cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(dtype, "tanh_backward", [&]<typename T>() {
    tanh_backward_kernel<T><<<grid_size(n, 256), 256, 0, stream>>>(
        static_cast<const T*>(grad_out), static_cast<const T*>(out), static_cast<T*>(grad_in), n);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
