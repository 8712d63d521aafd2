#include "cuda/rope.cuh"

#include <string>

#include "cuda/cuda_common.cuh"
#include "cuda/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// One thread per output element; it reads its own value and its pair partner.
template <typename T, typename P>
__global__ void rope_kernel(const T* x, T* y, const P* positions, RopeShape shape, RopeFrequencies frequencies,
                            bool inverse) {
  std::int64_t n = shape.tokens * shape.heads * shape.head_dim;
  std::int64_t half = shape.rotary_dim / 2;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t d = i % shape.head_dim;
    if (d >= shape.rotary_dim) {
      y[i] = x[i];
      continue;
    }
    bool first = shape.interleaved ? d % 2 == 0 : d < half;
    std::int64_t pair = shape.interleaved ? d / 2 : (first ? d : d - half);
    std::int64_t partner = shape.interleaved ? (first ? d + 1 : d - 1) : (first ? d + half : d - half);
    float position = static_cast<float>(positions[i / (shape.heads * shape.head_dim)]);
    float angle = __fmul_rn(position, frequencies.inv_freq[pair]);
    float c = round_through<T>(cosf(angle));
    float s = round_through<T>(inverse ? -sinf(angle) : sinf(angle));
    float own = round_through<T>(__fmul_rn(load_float(x + i), c));
    float other = round_through<T>(__fmul_rn(load_float(x + i - d + partner), s));
    store_float(y + i, first ? __fsub_rn(own, other) : __fadd_rn(own, other));
  }
}

}  // namespace

void rope_rotate(const void* x, void* y, DType dtype, const void* positions, DType position_dtype,
                 const RopeShape& shape, const RopeFrequencies& frequencies, bool inverse, cudaStream_t stream) {
  std::int64_t n = shape.tokens * shape.heads * shape.head_dim;
  if (n == 0) return;
  ZT_REQUIRE(shape.rotary_dim % 2 == 0 && shape.rotary_dim <= shape.head_dim && shape.rotary_dim / 2 <= kMaxRopePairs,
             "rope_rotate: rotary_dim " + std::to_string(shape.rotary_dim) + " must be even, at most head_dim " +
                 std::to_string(shape.head_dim) + " and at most " + std::to_string(2 * kMaxRopePairs));
  dispatch_float_type(dtype, "rope_rotate", [&]<typename T>() {
    auto launch = [&]<typename P>() {
      rope_kernel<T, P><<<grid_size(n, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                static_cast<const P*>(positions), shape,
                                                                frequencies, inverse);
    };
    if (position_dtype == DType::kI32) launch.template operator()<std::int32_t>();
    else if (position_dtype == DType::kI64) launch.template operator()<std::int64_t>();
    else throw Error(std::string("rope_rotate: positions must be int32 or int64, got ") + dtype_name(position_dtype));
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
