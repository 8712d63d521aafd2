#include "cuda/elementwise/accumulate.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

template <typename D, typename S>
__global__ void accumulate_kernel(D* dst, const S* src, std::int64_t n, float factor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store_float(dst + i, __fadd_rn(load_float(dst + i), __fmul_rn(load_float(src + i), factor)));  // no FMA: the CPU
                                                                                                   // rounds twice
}

}  // namespace

void accumulate(void* dst, DType dst_dtype, const void* src, DType src_dtype, std::int64_t n, float factor,
                cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(dst_dtype, "accumulate", [&]<typename D>() {
    dispatch_float_type(src_dtype, "accumulate", [&]<typename S>() {
      accumulate_kernel<D, S>
          <<<grid_size(n, 256), 256, 0, stream>>>(static_cast<D*>(dst), static_cast<const S*>(src), n, factor);
    });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
