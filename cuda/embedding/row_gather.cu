#include "cuda/embedding/row_gather.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

// A block per output row (grid-striding), threads across the width N elements at a time (16
// bytes where the rows allow it): contiguous, coalesced reads and writes. One source copies
// its row's bits; two are summed in float; an absent source (-1) adds nothing.
template <typename T, int N>
__global__ void gather_rows_summed_kernel(const T* x, const std::int32_t* first, const std::int32_t* second, T* out,
                                          std::int64_t rows, std::int64_t width) {
  using Chunk = Packed<T, N>;
  const std::int64_t chunks = width / N;
  for (std::int64_t n = blockIdx.x; n < rows; n += gridDim.x) {
    const std::int32_t a = first[n], b = second != nullptr ? second[n] : -1;
    Chunk* dst = reinterpret_cast<Chunk*>(out + n * width);
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      if (b < 0 && a >= 0) {
        dst[c] = reinterpret_cast<const Chunk*>(x + a * width)[c];
        continue;
      }
      float sum[N] = {}, term[N];
      for (const std::int32_t source : {a, b}) {
        if (source < 0) continue;
        load_vector<T, N>(x + source * width + c * N, term);
#pragma unroll
        for (int i = 0; i < N; ++i) sum[i] += term[i];
      }
      store_vector<T, N>(out + n * width + c * N, sum);
    }
  }
}

}  // namespace

void gather_rows_summed(const void* x, const std::int32_t* first, const std::int32_t* second, void* out,
                        std::int64_t out_rows, std::int64_t width, DType dtype, cudaStream_t stream) {
  if (out_rows == 0 || width == 0) return;
  dispatch_float_type(dtype, "gather_rows", [&]<typename T>() {
    constexpr int kWide = kVectorWidth<T>;
    auto launch = [&]<int N>() {
      const std::int64_t chunks = width / N;
      const int threads = chunks >= 256 ? 256 : static_cast<int>((chunks + 31) / 32 * 32);
      gather_rows_summed_kernel<T, N><<<grid_size(out_rows, 1), threads, 0, stream>>>(
          static_cast<const T*>(x), first, second, static_cast<T*>(out), out_rows, width);
    };
    if (width % kWide == 0 && is_aligned(x, 16) && is_aligned(out, 16))
      launch.template operator()<kWide>();
    else
      launch.template operator()<1>();
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
