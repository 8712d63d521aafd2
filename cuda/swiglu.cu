#include "cuda/swiglu.cuh"

#include "cuda/cuda_common.cuh"
#include "cuda/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

template <typename T>
__global__ void swiglu_forward_kernel(const T* gate, const T* up, T* out, SwigluLayout layout) {
  std::int64_t n = layout.rows * layout.ffn;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t at = (i / layout.ffn) * layout.in_row_stride + i % layout.ffn;
    float g = load_float(gate + at);
    float silu = round_through<T>(g / (1.0f + expf(-g)));
    store_float(out + i, silu * load_float(up + at));
  }
}

template <typename T>
__global__ void swiglu_backward_kernel(const T* grad_out, const T* gate, const T* up, T* grad_gate, T* grad_up,
                                       SwigluLayout layout) {
  std::int64_t n = layout.rows * layout.ffn;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t at = (i / layout.ffn) * layout.in_row_stride + i % layout.ffn;
    float g = load_float(gate + at), u = load_float(up + at), dy = load_float(grad_out + i);
    float s = sigmoid(g);
    float silu = round_through<T>(g / (1.0f + expf(-g)));
    float grad_silu = round_through<T>(dy * u);
    store_float(grad_up + at, dy * silu);
    store_float(grad_gate + at, grad_silu * (s * (1.0f + g * (1.0f - s))));
  }
}

}  // namespace

void swiglu_forward(const void* gate, const void* up, void* out, DType dtype, const SwigluLayout& layout,
                    cudaStream_t stream) {
  std::int64_t n = layout.rows * layout.ffn;
  if (n == 0) return;
  dispatch_float_type(dtype, "swiglu_forward", [&]<typename T>() {
    swiglu_forward_kernel<T><<<grid_size(n, 256), 256, 0, stream>>>(static_cast<const T*>(gate),
                                                                     static_cast<const T*>(up), static_cast<T*>(out),
                                                                     layout);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void swiglu_backward(const void* grad_out, const void* gate, const void* up, void* grad_gate, void* grad_up,
                     DType dtype, const SwigluLayout& layout, cudaStream_t stream) {
  std::int64_t n = layout.rows * layout.ffn;
  if (n == 0) return;
  dispatch_float_type(dtype, "swiglu_backward", [&]<typename T>() {
    swiglu_backward_kernel<T><<<grid_size(n, 256), 256, 0, stream>>>(
        static_cast<const T*>(grad_out), static_cast<const T*>(gate), static_cast<const T*>(up),
        static_cast<T*>(grad_gate), static_cast<T*>(grad_up), layout);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
