#include "cuda/rmsnorm.cuh"

#include "cuda/cuda_common.cuh"
#include "cuda/elementwise_dispatch.cuh"
#include "cuda/reduce_block.cuh"
#include "cuda/scratch_buffer.h"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

// The rows' dweight contributions are summed in this many chunks (fewer for few rows). A
// constant, not a function of the GPU, so the summation order — and the bits — are the
// same on every device.
constexpr std::int64_t kWeightGradChunks = 256;

template <typename T>
__device__ float normalized(float x, float rstd, bool round_normalized) {
  float n = x * rstd;
  return round_normalized ? round_through<T>(n) : n;
}

// One block per row: the sum of squares as a block reduction, then the scaled row.
template <typename T>
__global__ void rmsnorm_forward_kernel(const T* x, const T* weight, T* y, float* rstd, std::int64_t rows,
                                       std::int64_t hidden, float eps, bool round_normalized) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x_row = x + row * hidden;
    float squares = 0.0f;
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
      float v = load_float(x_row + h);
      squares += v * v;
    }
    float r = rsqrtf(block_sum(squares) / static_cast<float>(hidden) + eps);
    if (threadIdx.x == 0) rstd[row] = r;
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
      float n = normalized<T>(load_float(x_row + h), r, round_normalized);
      store_float(y + row * hidden + h, load_float(weight + h) * n);
    }
  }
}

// Block b owns rows [b * rows_per_chunk, ...) and the float row partial[b] of dweight; a
// thread always handles the same columns, so its read-modify-writes of partial never race.
template <typename T>
__global__ void rmsnorm_backward_kernel(const T* grad_y, const T* x, const T* weight, const float* rstd, T* grad_x,
                                        float* partial, std::int64_t rows, std::int64_t hidden,
                                        std::int64_t rows_per_chunk, bool round_normalized) {
  float* my_partial = partial + blockIdx.x * hidden;
  for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) my_partial[h] = 0.0f;
  std::int64_t begin = blockIdx.x * rows_per_chunk;
  std::int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  for (std::int64_t row = begin; row < end; ++row) {
    const T* g_row = grad_y + row * hidden;
    const T* x_row = x + row * hidden;
    float r = rstd[row];
    float dot = 0.0f;
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x)
      dot += load_float(g_row + h) * load_float(weight + h) * load_float(x_row + h);
    float coefficient = block_sum(dot) * r * r * r / static_cast<float>(hidden);
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
      float g = load_float(g_row + h), xv = load_float(x_row + h);
      store_float(grad_x + row * hidden + h, r * g * load_float(weight + h) - coefficient * xv);
      my_partial[h] += g * normalized<T>(xv, r, round_normalized);
    }
  }
}

template <typename T>
__global__ void sum_chunks_kernel(const float* partial, T* grad_weight, std::int64_t chunks, std::int64_t hidden) {
  for (std::int64_t h = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; h < hidden;
       h += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (std::int64_t c = 0; c < chunks; ++c) sum += partial[c * hidden + h];
    store_float(grad_weight + h, sum);
  }
}

}  // namespace

void rmsnorm_forward(const void* x, const void* weight, void* y, float* rstd, DType dtype, std::int64_t rows,
                     std::int64_t hidden, float eps, bool round_normalized, cudaStream_t stream) {
  if (rows == 0 || hidden == 0) return;
  dispatch_float_type(dtype, "rmsnorm_forward", [&]<typename T>() {
    rmsnorm_forward_kernel<T><<<grid_size(rows, 1), row_block_threads(hidden), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<T*>(y), rstd, rows, hidden, eps,
        round_normalized);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_backward(const void* grad_y, const void* x, const void* weight, const float* rstd, void* grad_x,
                      void* grad_weight, DType dtype, std::int64_t rows, std::int64_t hidden, bool round_normalized,
                      cudaStream_t stream) {
  if (hidden == 0) return;
  std::int64_t rows_per_chunk = rows == 0 ? 1 : (rows + kWeightGradChunks - 1) / kWeightGradChunks;
  std::int64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  ScratchBuffer partial(static_cast<std::size_t>(chunks > 0 ? chunks : 1) * hidden * sizeof(float), stream);
  dispatch_float_type(dtype, "rmsnorm_backward", [&]<typename T>() {
    if (chunks > 0) {
      rmsnorm_backward_kernel<T><<<static_cast<unsigned>(chunks), row_block_threads(hidden), 0, stream>>>(
          static_cast<const T*>(grad_y), static_cast<const T*>(x), static_cast<const T*>(weight), rstd,
          static_cast<T*>(grad_x), partial.as<float>(), rows, hidden, rows_per_chunk, round_normalized);
      ZT_CUDA_CHECK(cudaGetLastError());
    }
    sum_chunks_kernel<T><<<grid_size(hidden, 256), 256, 0, stream>>>(partial.as<float>(), static_cast<T*>(grad_weight),
                                                                     chunks, hidden);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
