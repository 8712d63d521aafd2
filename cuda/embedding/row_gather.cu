#include "cuda/embedding/row_gather.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

// A block per output row (grid-striding), threads across the width: contiguous, coalesced
// reads and writes; an absent source (-1) adds nothing, a row with none is written as zeros.
template <typename T>
__global__ void gather_rows_summed_kernel(const T* x, const std::int32_t* first, const std::int32_t* second, T* out,
                                          std::int64_t rows, std::int64_t width) {
  for (std::int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const std::int32_t a = first[n], b = second != nullptr ? second[n] : -1;
    T* dst = out + n * width;
    for (std::int64_t h = threadIdx.x; h < width; h += blockDim.x) {
      if (b < 0 && a >= 0) {
        dst[h] = x[a * width + h];
        continue;
      }
      float sum = 0.0f;
      if (a >= 0) sum += load_float(x + a * width + h);
      if (b >= 0) sum += load_float(x + b * width + h);
      store_float(dst + h, sum);
    }
  }
}

}  // namespace

void gather_rows_summed(const void* x, const std::int32_t* first, const std::int32_t* second, void* out,
                        std::int64_t out_rows, std::int64_t width, DType dtype, cudaStream_t stream) {
  if (out_rows == 0 || width == 0) return;
  const int threads = width >= 256 ? 256 : static_cast<int>((width + 31) / 32 * 32);
  dispatch_float_type(dtype, "gather_rows", [&]<typename T>() {
    gather_rows_summed_kernel<<<grid_size(out_rows, 1), threads, 0, stream>>>(static_cast<const T*>(x), first, second,
                                                                              static_cast<T*>(out), out_rows, width);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
