#include "cuda/l2norm.cuh"

#include "cuda/cuda_common.cuh"
#include "cuda/elementwise_dispatch.cuh"
#include "cuda/reduce_block.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kElementsPerBlock = kThreads * 16;
constexpr std::int64_t kMaxPartialsPerTensor = 1024;

template <typename T>
__global__ void sum_squares_kernel(const T* x, std::int64_t n, float* partials) {
  float sum = 0.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float v = load_float(x + i);
    sum += v * v;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void sqrt_of_sum_kernel(const float* partials, std::int64_t count, float* out) {
  double sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += static_cast<double>(partials[i]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) *out = static_cast<float>(sqrt(sum));
}

}  // namespace

std::int64_t sum_squares_partial_count(std::int64_t n) {
  std::int64_t blocks = (n + kElementsPerBlock - 1) / kElementsPerBlock;
  return blocks < 1 ? 1 : (blocks > kMaxPartialsPerTensor ? kMaxPartialsPerTensor : blocks);
}

void sum_squares_partials(const void* x, DType dtype, std::int64_t n, float* partials, cudaStream_t stream) {
  auto blocks = static_cast<unsigned>(sum_squares_partial_count(n));
  dispatch_float_type(dtype, "sum_squares_partials", [&]<typename T>() {
    sum_squares_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), n, partials);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void sqrt_of_partial_sum(const float* partials, std::int64_t count, float* out, cudaStream_t stream) {
  sqrt_of_sum_kernel<<<1, kThreads, 0, stream>>>(partials, count, out);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
