// AdamW on one parameter: float32 master weights and moments updated in place from a
// float32/bfloat16/float16 gradient. Two kernels: the first raises a flag on any
// non-finite gradient element, the second reads that flag on the device and, when it is
// raised, leaves everything untouched, so a skipped fp16 step needs no host round trip.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// The step's scalars, computed by the host in double as torch does and passed as float.
struct AdamWScalars {
  float decay_factor = 1.0f;       // 1 - lr * weight_decay
  float beta1 = 0.9f;
  float one_minus_beta1 = 0.1f;
  float beta2 = 0.999f;
  float one_minus_beta2 = 0.001f;
  float step_size = 0.0f;          // lr / (1 - beta1^step)
  float bias_correction2_sqrt = 1.0f;  // sqrt(1 - beta2^step)
  float eps = 1e-8f;
  float grad_scale = 1.0f;         // the gradient is divided by it
};

// Sets *found_non_finite to true when a grad element is inf or NaN; never clears it.
void adamw_find_non_finite(const void* grad, DType grad_dtype, std::int64_t n, bool* found_non_finite,
                           cudaStream_t stream);

// Unless *found_non_finite: per element, g = grad / grad_scale; p *= decay_factor;
// m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) (g g);
// p -= step_size * m / (sqrt(v) / bias_correction2_sqrt + eps); working = p rounded to
// working_dtype when working is not null. Each operation rounds to float32 as written
// (no fused multiply-add), matching the CPU reference bit for bit.
void adamw_update(float* master, float* exp_avg, float* exp_avg_sq, const void* grad, DType grad_dtype,
                  void* working, DType working_dtype, std::int64_t n, const AdamWScalars& scalars,
                  const bool* found_non_finite, cudaStream_t stream);

}  // namespace zt::cuda
