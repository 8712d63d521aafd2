#include "tensor/device_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/philox.h"
#include "tensor/dispatch.h"

namespace zt::kernels {
namespace {

template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Converts as the host path (tensor/dispatch.h) does: 16-bit floats through float.
template <typename D, typename S>
__device__ D convert(S value) {
  if constexpr (std::is_same_v<D, S>) {
    return value;
  } else if constexpr (kIsHalfLike<S>) {
    return convert<D>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<D, __half>) {
    return __float2half_rn(static_cast<float>(value));
  } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(value));
  } else if constexpr (std::is_same_v<D, bool>) {
    return value != S(0);
  } else if constexpr (std::is_integral_v<D> && !std::is_integral_v<S>) {
    return static_cast<D>(static_cast<std::int64_t>(value));  // wraps like the host path
  } else {
    return static_cast<D>(value);
  }
}

__device__ std::int64_t element_offset(std::int64_t linear, const StridedLayout& layout) {
  std::int64_t offset = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    std::int64_t extent = layout.shape[d];
    offset += (linear % extent) * layout.strides[d];
    linear /= extent;
  }
  return offset;
}

template <typename S, typename D>
__global__ void strided_copy_kernel(const S* src, StridedLayout src_layout, D* dst, StridedLayout dst_layout,
                                    std::int64_t numel) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[element_offset(i, dst_layout)] = convert<D>(src[element_offset(i, src_layout)]);
}

template <typename T>
__global__ void arange_kernel(T* dst, double start, double step, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = convert<T>(start + step * static_cast<double>(i));
}

template <typename T>
__global__ void philox_fill_kernel(T* dst, std::int64_t n, std::uint64_t seed, std::uint64_t offset, bool normal,
                                   float scale, float shift) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float draw = normal ? philox::normal(seed, offset, i) : philox::uniform(seed, offset, i);
    dst[i] = convert<T>(__fmaf_rn(draw, scale, shift));
  }
}

constexpr int kThreads = 256;

unsigned grid_for(std::int64_t n) {
  std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

}  // namespace

void strided_copy(const void* src, DType src_dtype, const StridedLayout& src_layout, void* dst, DType dst_dtype,
                  const StridedLayout& dst_layout, std::int64_t numel, cudaStream_t stream) {
  if (numel == 0) return;
  dispatch_dtype_as<__half, __nv_bfloat16>(src_dtype, [&]<typename S>() {
    dispatch_dtype_as<__half, __nv_bfloat16>(dst_dtype, [&]<typename D>() {
      strided_copy_kernel<S, D><<<grid_for(numel), kThreads, 0, stream>>>(static_cast<const S*>(src), src_layout,
                                                                          static_cast<D*>(dst), dst_layout, numel);
    });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void arange(void* dst, DType dtype, double start, double step, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_dtype_as<__half, __nv_bfloat16>(dtype, [&]<typename T>() {
    arange_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), start, step, n);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void philox_fill(void* dst, DType dtype, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                 Distribution distribution, float scale, float shift, cudaStream_t stream) {
  if (n == 0) return;
  bool normal = distribution == Distribution::kNormal;
  dispatch_dtype_as<__half, __nv_bfloat16>(dtype, [&]<typename T>() {
    philox_fill_kernel<T>
        <<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, seed, offset, normal, scale, shift);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::kernels
