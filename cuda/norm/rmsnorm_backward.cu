// RMSNorm backward kernels (see rmsnorm_row.cuh for how rows map onto threads). dweight is
// deterministic: block b owns a fixed run of rows and sums their contributions in a fixed
// order into partial row b; a second kernel adds the partial rows in order.
#include <algorithm>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/scratch_buffer.h"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/norm/rmsnorm.cuh"
#include "cuda/norm/rmsnorm_row.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

using namespace rmsnorm_detail;

// At most this many blocks, hence dweight partial rows: enough 256-thread blocks to fill
// every SM of a 132-SM GPU (a row group waits for its row's sum before it loads the next row,
// so only many resident rows hide the memory latency; 256 blocks ran at 0.40 of the copy
// bandwidth), while the partials stay a few MiB against the hundreds the rows take. A
// constant rather than a function of the GPU, so the summation order — and the bits — are
// the same everywhere.
constexpr std::int64_t kMaxBlocks = 1024;

template <typename T, int W>
using Raw = Packed<T, W>;

template <typename T, int W>
__device__ __forceinline__ float element(const Raw<T, W>& raw, int i) {
  return static_cast<float>(raw.v[i]);
}

// Makes the compiler treat the raw row as changed, so the second pass converts it again
// instead of keeping the first pass's floats alive across the reduction: the 16-bit row
// then costs half the registers.
template <typename T, int W>
__device__ __forceinline__ void forget_conversions(Raw<T, W>& raw) {
  if constexpr (sizeof(raw) % 4 == 0) {
    auto* words = reinterpret_cast<unsigned*>(&raw);
#pragma unroll
    for (unsigned i = 0; i < sizeof(raw) / 4; ++i) asm volatile("" : "+r"(words[i]));
  }
}

// One row's dx, stored, and its dweight contribution added to this thread's sums of the
// vector's columns.
template <typename T, int W, bool kGradSum>
__device__ __forceinline__ void finish_vector(const BackwardArgs& a, std::int64_t at, std::int64_t column,
                                              const Raw<T, W>& g, const Raw<T, W>& x, float rstd, float coefficient,
                                              float (&dw)[W]) {
  float w[W], gs[W] = {}, out[W];
  load_vector_ro<T, W>(static_cast<const T*>(a.io.weight) + column, w);
  if constexpr (kGradSum) load_vector<T, W>(static_cast<const T*>(a.io.grad_sum) + at, gs);
#pragma unroll
  for (int i = 0; i < W; ++i) {
    float gv = element(g, i), xv = element(x, i);
    out[i] = grad_input<T, kGradSum>(gv, w[i], xv, rstd, coefficient, gs[i]);
    dw[i] += __fmul_rn(gv, normalized<T>(xv, rstd, a.round_normalized));
  }
  store_vector<T, W>(static_cast<T*>(a.io.grad_x) + at, out);
}

// Each row group accumulates dweight for its own columns over its rows, in registers when a
// thread's columns fit in 32 of them (every plan up to 16384 bf16 columns), else in its own
// shared row (a thread's 8 columns apart from its neighbours' make that an 8-way bank conflict
// per element and row: the registers path avoids it). At the end the block adds its groups'
// rows in order into partial row blockIdx.x; the order of every sum is the same either way.
template <typename T, int W, int kVectors, bool kGradSum>
__global__ void __launch_bounds__(512) backward_registers_kernel(BackwardArgs a) {
  constexpr bool kRegisterSums = kVectors * W <= 32;
  extern __shared__ float dw_rows[];  // [groups, hidden]
  __shared__ float scratch[32];
  const RowGroup g = row_group(a.group_threads);
  const std::int64_t vectors = a.hidden / W;
  float* dw = dw_rows + g.index * a.hidden;
  float sums[kVectors][W] = {};
  if constexpr (!kRegisterSums)
    for (int k = 0; k < kVectors; ++k) {
      const std::int64_t j = g.lane + static_cast<std::int64_t>(k) * g.threads;
      if (j < vectors)
        for (int i = 0; i < W; ++i) dw[j * W + i] = 0.0f;
    }
  const std::int64_t begin = blockIdx.x * a.rows_per_block;
  const std::int64_t end = std::min(a.rows, begin + a.rows_per_block);
  for (std::int64_t first = begin; first < end; first += g.count) {
    const std::int64_t row = first + g.index;
    const bool active = row < end;
    Raw<T, W> gy[kVectors], xs[kVectors];
    float dot = 0.0f;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const std::int64_t j = g.lane + static_cast<std::int64_t>(k) * g.threads;
      if (active && j < vectors) {
        const std::int64_t at = row * a.hidden + j * W;
        gy[k] = *reinterpret_cast<const Raw<T, W>*>(static_cast<const T*>(a.io.grad_y) + at);
        xs[k] = *reinterpret_cast<const Raw<T, W>*>(static_cast<const T*>(a.io.x) + at);
        float w[W];
        load_vector_ro<T, W>(static_cast<const T*>(a.io.weight) + j * W, w);
#pragma unroll
        for (int i = 0; i < W; ++i) dot += __fmul_rn(__fmul_rn(element(gy[k], i), w[i]), element(xs[k], i));
      }
    }
    const float total = group_sum(dot, g.threads, scratch);
    if (!active) continue;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      forget_conversions(gy[k]);
      forget_conversions(xs[k]);
    }
    const float rstd = a.io.rstd[row];
    const float coefficient = dx_coefficient(total, rstd, a.hidden);
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const std::int64_t j = g.lane + static_cast<std::int64_t>(k) * g.threads;
      if (j >= vectors) continue;
      if constexpr (!kRegisterSums)
        for (int i = 0; i < W; ++i) sums[k][i] = dw[j * W + i];
      finish_vector<T, W, kGradSum>(a, row * a.hidden + j * W, j * W, gy[k], xs[k], rstd, coefficient, sums[k]);
      if constexpr (!kRegisterSums)
        for (int i = 0; i < W; ++i) dw[j * W + i] = sums[k][i];
    }
  }
  if constexpr (kRegisterSums) {
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const std::int64_t j = g.lane + static_cast<std::int64_t>(k) * g.threads;
      if (j < vectors)
        for (int i = 0; i < W; ++i) dw[j * W + i] = sums[k][i];
    }
  }
  __syncthreads();
  for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x) {
    float sum = 0.0f;
    for (int r = 0; r < g.count; ++r) sum += dw_rows[r * a.hidden + h];
    a.partial[blockIdx.x * a.hidden + h] = sum;
  }
}

// Rows too long for registers: each row read twice; a thread keeps the same columns in
// every row, so its read-modify-writes of the block's partial row never race.
template <typename T, bool kGradSum>
__global__ void __launch_bounds__(512) backward_wide_kernel(BackwardArgs a) {
  __shared__ float scratch[32];
  float* dw = a.partial + blockIdx.x * a.hidden;
  for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x) dw[h] = 0.0f;
  const std::int64_t begin = blockIdx.x * a.rows_per_block;
  const std::int64_t end = std::min(a.rows, begin + a.rows_per_block);
  const T* grad_y = static_cast<const T*>(a.io.grad_y);
  const T* x = static_cast<const T*>(a.io.x);
  for (std::int64_t row = begin; row < end; ++row) {
    const std::int64_t base = row * a.hidden;
    float dot = 0.0f;
    for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x)
      dot += __fmul_rn(__fmul_rn(load_float(grad_y + base + h), load_float(static_cast<const T*>(a.io.weight) + h)),
                       load_float(x + base + h));
    const float rstd = a.io.rstd[row];
    const float coefficient = dx_coefficient(group_sum(dot, blockDim.x, scratch), rstd, a.hidden);
    for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x) {
      Raw<T, 1> g{{grad_y[base + h]}}, xv{{x[base + h]}};
      float sum[1] = {dw[h]};
      finish_vector<T, 1, kGradSum>(a, base + h, h, g, xv, rstd, coefficient, sum);
      dw[h] = sum[0];
    }
  }
}

// grad_weight[h] = the partial rows' column h added in a fixed order. Block (32 x 32): 32
// columns, each summed by 32 threads over interleaved partial rows, then in order across
// them: with a thousand partial rows, fewer threads per column left too few loads in flight
// and this pass took as long as the row kernel at training shapes.
constexpr int kSumThreadsPerColumn = 32;

template <typename T>
__global__ void __launch_bounds__(32 * kSumThreadsPerColumn)
    sum_partials_kernel(const float* partial, T* grad_weight, std::int64_t blocks, std::int64_t hidden) {
  __shared__ float sums[kSumThreadsPerColumn][33];
  const std::int64_t column = static_cast<std::int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float sum = 0.0f;
  if (column < hidden)
#pragma unroll 4
    for (std::int64_t b = threadIdx.y; b < blocks; b += kSumThreadsPerColumn) sum += partial[b * hidden + column];
  sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || column >= hidden) return;
  float total = 0.0f;
  for (int y = 0; y < kSumThreadsPerColumn; ++y) total += sums[y][threadIdx.x];
  store_float(grad_weight + column, total);
}

template <typename T, bool kGradSum>
void launch(const Plan& plan, const BackwardArgs& a, unsigned blocks, cudaStream_t stream) {
  if (!plan.registers) {
    backward_wide_kernel<T, kGradSum><<<blocks, plan.block_threads(), 0, stream>>>(a);
    return;
  }
  std::size_t shared = static_cast<std::size_t>(plan.groups) * a.hidden * sizeof(float);
  dispatch_register_shape<T>(plan, [&]<int W, int kVectors>() {
    auto kernel = backward_registers_kernel<T, W, kVectors, kGradSum>;
    if (shared > 48 * 1024)
      ZT_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
    kernel<<<blocks, plan.block_threads(), shared, stream>>>(a);
  });
}

}  // namespace

void rmsnorm_backward(const RmsNormBackwardArgs& b, DType dtype, std::int64_t rows, std::int64_t hidden,
                      bool round_normalized, cudaStream_t stream) {
  if (hidden == 0) return;
  const Plan plan = make_plan(dtype, hidden, {b.grad_y, b.grad_sum, b.x, b.weight, b.grad_x});
  std::int64_t rows_per_group = (rows + kMaxBlocks * plan.groups - 1) / (kMaxBlocks * plan.groups);
  std::int64_t rows_per_block = std::max<std::int64_t>(1, rows_per_group) * plan.groups;
  std::int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  ScratchBuffer partial(static_cast<std::size_t>(std::max<std::int64_t>(blocks, 1)) * hidden * sizeof(float), stream);
  BackwardArgs a(b, rows, hidden, round_normalized, plan);
  a.partial = partial.as<float>();
  a.rows_per_block = rows_per_block;
  dispatch_float_type(dtype, "rmsnorm_backward", [&]<typename T>() {
    if (blocks > 0) {
      if (b.grad_sum != nullptr)
        launch<T, true>(plan, a, static_cast<unsigned>(blocks), stream);
      else
        launch<T, false>(plan, a, static_cast<unsigned>(blocks), stream);
      ZT_CUDA_CHECK(cudaGetLastError());
    }
    sum_partials_kernel<T><<<static_cast<unsigned>((hidden + 31) / 32), dim3(32, kSumThreadsPerColumn), 0, stream>>>(
        a.partial, static_cast<T*>(b.grad_weight), blocks, hidden);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
