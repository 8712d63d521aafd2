// RMSNorm forward kernels (see rmsnorm_row.cuh for how rows map onto threads).
#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/norm/rmsnorm.cuh"
#include "cuda/norm/rmsnorm_row.cuh"
#include "cuda/common/vector_io.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

using namespace rmsnorm_detail;

// The input row element as normalised: x, or dtype(x + residual), which is also stored.
template <typename T, int W, bool kResidual>
__device__ __forceinline__ void load_input(const Args& a, std::int64_t at, float (&v)[W]) {
  load_vector<T, W>(static_cast<const T*>(a.x) + at, v);
  if constexpr (kResidual) {
    float r[W];
    load_vector<T, W>(static_cast<const T*>(a.residual) + at, r);
#pragma unroll
    for (int i = 0; i < W; ++i) v[i] = round_through<T>(__fadd_rn(v[i], r[i]));
    store_vector<T, W>(static_cast<T*>(a.sum) + at, v);
  }
}

template <typename T, int W>
__device__ __forceinline__ void store_scaled(const Args& a, std::int64_t at, std::int64_t column, const float (&v)[W],
                                             float rstd) {
  float w[W], out[W];
  load_vector_ro<T, W>(static_cast<const T*>(a.weight) + column, w);
#pragma unroll
  for (int i = 0; i < W; ++i) out[i] = __fmul_rn(w[i], normalized<T>(v[i], rstd, a.round_normalized));
  store_vector<T, W>(static_cast<T*>(a.y) + at, out);
}

// The row stays in registers between the sum of squares and the scale.
template <typename T, int W, int kVectors, bool kResidual>
__global__ void __launch_bounds__(512) forward_registers_kernel(Args a) {
  __shared__ float scratch[32];
  const RowGroup g = row_group(a.group_threads);
  const std::int64_t vectors = a.hidden / W;
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * g.count; first < a.rows;
       first += static_cast<std::int64_t>(gridDim.x) * g.count) {
    const std::int64_t row = first + g.index;
    const bool active = row < a.rows;
    float v[kVectors][W];
    float squares = 0.0f;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const std::int64_t j = g.lane + static_cast<std::int64_t>(k) * g.threads;
      if (active && j < vectors) {
        load_input<T, W, kResidual>(a, row * a.hidden + j * W, v[k]);
#pragma unroll
        for (int i = 0; i < W; ++i) squares += v[k][i] * v[k][i];
      }
    }
    const float rstd = inverse_rms(group_sum(squares, g.threads, scratch), a.hidden, a.eps);
    if (!active) continue;
    if (g.lane == 0) a.rstd[row] = rstd;
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const std::int64_t j = g.lane + static_cast<std::int64_t>(k) * g.threads;
      if (j < vectors) store_scaled<T, W>(a, row * a.hidden + j * W, j * W, v[k], rstd);
    }
  }
}

// Rows too long for registers: one block per row, reading it twice (the second pass mostly
// from L2). With a residual the second pass reads back the sum this thread just stored.
template <typename T, bool kResidual>
__global__ void __launch_bounds__(512) forward_wide_kernel(Args a) {
  __shared__ float scratch[32];
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const std::int64_t base = row * a.hidden;
    float squares = 0.0f;
    for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x) {
      float v[1];
      load_input<T, 1, kResidual>(a, base + h, v);
      squares += v[0] * v[0];
    }
    const float rstd = inverse_rms(group_sum(squares, blockDim.x, scratch), a.hidden, a.eps);
    if (threadIdx.x == 0) a.rstd[row] = rstd;
    const T* source = static_cast<const T*>(kResidual ? a.sum : a.x);
    for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x) {
      float v[1] = {load_float(source + base + h)};
      store_scaled<T, 1>(a, base + h, h, v, rstd);
    }
  }
}

bool vectorizable(const RmsNormForwardArgs& f, std::int64_t hidden, DType dtype) {
  std::size_t bytes = 16;
  bool aligned = is_aligned(f.x, bytes) && is_aligned(f.weight, bytes) && is_aligned(f.y, bytes) &&
                 (f.residual == nullptr || (is_aligned(f.residual, bytes) && is_aligned(f.sum, bytes)));
  return aligned && (hidden * static_cast<std::int64_t>(dtype_size(dtype))) % 16 == 0;
}

template <typename T, bool kResidual>
void launch(const Plan& plan, const Args& a, cudaStream_t stream) {
  if (!plan.registers) {
    forward_wide_kernel<T, kResidual><<<grid_size(a.rows, 1), plan.block_threads(), 0, stream>>>(a);
    return;
  }
  unsigned blocks = grid_size(a.rows, plan.groups);
  auto with_width = [&]<int W>() {
    dispatch_vectors_per_thread(plan.vectors_per_thread, [&]<int kVectors>() {
      forward_registers_kernel<T, W, kVectors, kResidual><<<blocks, plan.block_threads(), 0, stream>>>(a);
    });
  };
  if (plan.width == 1) with_width.template operator()<1>();
  else with_width.template operator()<kVectorWidth<T>>();
}

}  // namespace

void rmsnorm_forward(const RmsNormForwardArgs& f, DType dtype, std::int64_t rows, std::int64_t hidden, float eps,
                     bool round_normalized, cudaStream_t stream) {
  ZT_REQUIRE((f.residual == nullptr) == (f.sum == nullptr),
             "rmsnorm_forward: residual and sum must be given together (the fused residual add) or not at all");
  if (rows == 0 || hidden == 0) return;
  Plan plan = make_plan(dtype, hidden, vectorizable(f, hidden, dtype));
  Args a;
  a.x = f.x;
  a.residual = f.residual;
  a.weight = f.weight;
  a.y = f.y;
  a.sum = f.sum;
  a.rstd = f.rstd;
  a.rows = rows;
  a.hidden = hidden;
  a.eps = eps;
  a.round_normalized = round_normalized;
  a.group_threads = plan.group_threads;
  dispatch_float_type(dtype, "rmsnorm_forward", [&]<typename T>() {
    if (f.residual != nullptr) launch<T, true>(plan, a, stream);
    else launch<T, false>(plan, a, stream);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
