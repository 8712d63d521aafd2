#include "cuda/elementwise/dropout.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/philox.h"

namespace zt::cuda {
namespace {

template <typename T>
__global__ void dropout_kernel(const T* x, T* out, std::int64_t n, float p, float scale, std::uint64_t seed,
                               std::uint64_t offset) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    bool keep = philox::uniform(seed, offset, static_cast<std::uint64_t>(i)) >= p;
    store_float(out + i, keep ? __fmul_rn(load_float(x + i), scale) : 0.0f);
  }
}

}  // namespace

void dropout_apply(const void* x, void* out, DType dtype, std::int64_t n, float p, float scale, std::uint64_t seed,
                   std::uint64_t offset, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(dtype, "dropout_apply", [&]<typename T>() {
    dropout_kernel<T><<<grid_size(n, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), n, p,
                                                             scale, seed, offset);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
