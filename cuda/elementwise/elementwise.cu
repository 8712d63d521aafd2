#include "cuda/elementwise/elementwise.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, std::int64_t n, std::int64_t b_numel) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float x = load_float(a + i), y = load_float(b + (b_numel == n ? i : i % b_numel));
    float result = op == BinaryOp::kAdd ? x + y : (op == BinaryOp::kSub ? x - y : x * y);
    store_float(out + i, result);
  }
}

template <typename T>
__global__ void scale_kernel(const T* x, T* out, std::int64_t n, float factor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store_float(out + i, load_float(x + i) * factor);
}

}  // namespace

void binary_elementwise(BinaryOp op, const void* a, const void* b, void* out, DType dtype, std::int64_t n,
                        std::int64_t b_numel, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(dtype, "binary_elementwise", [&]<typename T>() {
    binary_kernel<T><<<grid_size(n, 256), 256, 0, stream>>>(op, static_cast<const T*>(a), static_cast<const T*>(b),
                                                            static_cast<T*>(out), n, b_numel);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void scale_elementwise(const void* x, void* out, DType dtype, std::int64_t n, float factor, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(dtype, "scale_elementwise", [&]<typename T>() {
    scale_kernel<T><<<grid_size(n, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), n, factor);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
