#include "cuda/adamw.cuh"

#include "cuda/cuda_common.cuh"
#include "cuda/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

template <typename G>
__global__ void find_non_finite_kernel(const G* grad, std::int64_t n, bool* found) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    if (!isfinite(load_float(grad + i))) *found = true;  // every writer stores the same value
}

template <typename G, typename W>
__global__ void adamw_kernel(float* master, float* exp_avg, float* exp_avg_sq, const G* grad, W* working,
                             std::int64_t n, AdamWScalars s, const bool* found_non_finite) {
  if (*found_non_finite) return;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    // Explicit roundings (no fused multiply-adds) so the GPU reproduces the CPU's bits.
    float g = __fdiv_rn(load_float(grad + i), s.grad_scale);
    float p = __fmul_rn(master[i], s.decay_factor);
    float m = __fadd_rn(__fmul_rn(s.beta1, exp_avg[i]), __fmul_rn(s.one_minus_beta1, g));
    float v = __fadd_rn(__fmul_rn(s.beta2, exp_avg_sq[i]), __fmul_rn(s.one_minus_beta2, __fmul_rn(g, g)));
    float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), s.bias_correction2_sqrt), s.eps);
    p = __fsub_rn(p, __fmul_rn(s.step_size, __fdiv_rn(m, denom)));
    master[i] = p;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    if (working != nullptr) store_float(working + i, p);
  }
}

}  // namespace

void adamw_find_non_finite(const void* grad, DType grad_dtype, std::int64_t n, bool* found_non_finite,
                           cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(grad_dtype, "adamw_find_non_finite", [&]<typename G>() {
    find_non_finite_kernel<G><<<grid_size(n, 256), 256, 0, stream>>>(static_cast<const G*>(grad), n,
                                                                      found_non_finite);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void adamw_update(float* master, float* exp_avg, float* exp_avg_sq, const void* grad, DType grad_dtype,
                  void* working, DType working_dtype, std::int64_t n, const AdamWScalars& scalars,
                  const bool* found_non_finite, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(grad_dtype, "adamw_update", [&]<typename G>() {
    dispatch_float_type(working == nullptr ? DType::kF32 : working_dtype, "adamw_update", [&]<typename W>() {
      adamw_kernel<G, W><<<grid_size(n, 256), 256, 0, stream>>>(master, exp_avg, exp_avg_sq,
                                                                 static_cast<const G*>(grad),
                                                                 static_cast<W*>(working), n, scalars,
                                                                 found_non_finite);
    });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
