// RMSNorm forward kernels (see rmsnorm_row.cuh for how rows map onto threads).
#include "cuda/common/cuda_common.cuh"
#include "cuda/common/programmatic_launch.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/norm/rmsnorm.cuh"
#include "cuda/norm/rmsnorm_row.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

using namespace rmsnorm_detail;

// The input row element as normalised: x, or dtype(x + residual), which is also stored.
template <typename T, int W, bool kResidual>
__device__ __forceinline__ void load_input(const ForwardArgs& a, std::int64_t at, float (&v)[W]) {
  load_vector<T, W>(static_cast<const T*>(a.io.x) + at, v);
  if constexpr (kResidual) {
    float r[W];
    load_vector<T, W>(static_cast<const T*>(a.io.residual) + at, r);
#pragma unroll
    for (int i = 0; i < W; ++i) v[i] = round_through<T>(__fadd_rn(v[i], r[i]));
    store_vector<T, W>(static_cast<T*>(a.io.sum) + at, v);
  }
}

template <typename T, int W>
__device__ __forceinline__ void store_scaled(const ForwardArgs& a, std::int64_t at, std::int64_t column,
                                             const float (&v)[W], float rstd) {
  float w[W], out[W];
  load_vector_ro<T, W>(static_cast<const T*>(a.io.weight) + column, w);
#pragma unroll
  for (int i = 0; i < W; ++i) out[i] = __fmul_rn(w[i], normalized<T>(v[i], rstd, a.round_normalized));
  store_vector<T, W>(static_cast<T*>(a.io.y) + at, out);
}

// The row stays in registers between the sum of squares and the scale. Both kernels are
// launched after prior (programmatic_launch.cuh): a decode step's norms are chain links.
template <typename T, int W, int kVectors, bool kResidual>
__global__ void __launch_bounds__(512) forward_registers_kernel(ForwardArgs a) {
  __shared__ float scratch[32];
  wait_for_prior_grids();
  allow_next_grid_launch();
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
    if (g.lane == 0) a.io.rstd[row] = rstd;
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
__global__ void __launch_bounds__(512) forward_wide_kernel(ForwardArgs a) {
  __shared__ float scratch[32];
  wait_for_prior_grids();
  allow_next_grid_launch();
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const std::int64_t base = row * a.hidden;
    float squares = 0.0f;
    for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x) {
      float v[1];
      load_input<T, 1, kResidual>(a, base + h, v);
      squares += v[0] * v[0];
    }
    const float rstd = inverse_rms(group_sum(squares, blockDim.x, scratch), a.hidden, a.eps);
    if (threadIdx.x == 0) a.io.rstd[row] = rstd;
    const T* source = static_cast<const T*>(kResidual ? a.io.sum : a.io.x);
    for (std::int64_t h = threadIdx.x; h < a.hidden; h += blockDim.x) {
      float v[1] = {load_float(source + base + h)};
      store_scaled<T, 1>(a, base + h, h, v, rstd);
    }
  }
}

template <typename T, bool kResidual>
void launch(const Plan& plan, const ForwardArgs& a, cudaStream_t stream) {
  if (!plan.registers) {
    launch_after_prior(forward_wide_kernel<T, kResidual>, grid_size(a.rows, 1), plan.block_threads(), 0, stream, a);
    return;
  }
  unsigned blocks = grid_size(a.rows, plan.groups);
  dispatch_register_shape<T>(plan, [&]<int W, int kVectors>() {
    launch_after_prior(forward_registers_kernel<T, W, kVectors, kResidual>, blocks, plan.block_threads(), 0, stream, a);
  });
}

}  // namespace

void rmsnorm_forward(const RmsNormForwardArgs& f, DType dtype, std::int64_t rows, std::int64_t hidden, float eps,
                     bool round_normalized, cudaStream_t stream) {
  ZT_REQUIRE((f.residual == nullptr) == (f.sum == nullptr),
             "rmsnorm_forward: residual and sum must be given together (the fused residual add) or not at all");
  if (rows == 0 || hidden == 0) return;
  const Plan plan = make_plan(dtype, hidden, {f.x, f.residual, f.weight, f.y, f.sum});
  ForwardArgs a(f, rows, hidden, round_normalized, plan);
  a.eps = eps;
  dispatch_float_type(dtype, "rmsnorm_forward", [&]<typename T>() {
    if (f.residual != nullptr)
      launch<T, true>(plan, a, stream);
    else
      launch<T, false>(plan, a, stream);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
