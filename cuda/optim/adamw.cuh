// AdamW over many parameters in few launches (multi-tensor apply, up to 48 tensors a
// launch): float32 master weights and moments updated in place from float32/bfloat16/float16
// gradients, with an optional 16/32-bit working copy written from the new master. First
// every gradient is checked for inf/NaN into one device flag; the update kernels read that
// flag on the device and, when it is raised, leave everything untouched, so a skipped fp16
// step needs no host round trip.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// The step's scalars shared by every tensor, computed by the host in double as torch does
// and passed as float.
struct AdamWScalars {
  float beta1 = 0.9f;
  float one_minus_beta1 = 0.1f;
  float beta2 = 0.999f;
  float one_minus_beta2 = 0.001f;
  float step_size = 0.0f;              // lr / (1 - beta1^step)
  float bias_correction2_sqrt = 1.0f;  // sqrt(1 - beta2^step)
  float eps = 1e-8f;
  float grad_scale = 1.0f;  // the gradient is divided by it
};

// One parameter: n contiguous elements in each buffer. working may be null.
struct AdamWTensor {
  float* master = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  const void* grad = nullptr;
  DType grad_dtype = DType::kF32;
  void* working = nullptr;
  DType working_dtype = DType::kBF16;
  std::int64_t n = 0;
  float decay_factor = 1.0f;  // 1 - lr * weight_decay, per parameter
};

// Clears *found_non_finite, raises it when any gradient element is inf or NaN (when
// `check_finite`; the caller may know they are), then unless it is raised, per element: g = grad / grad_scale; p *=
// decay_factor; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) (g g); p -= step_size * m / (sqrt(v) /
// bias_correction2_sqrt + eps); working = p rounded to working_dtype. Each operation rounds to float32 as written (no
// fused multiply-add), matching the CPU reference bit for bit.
void adamw_step_multi(const AdamWTensor* tensors, std::size_t count, const AdamWScalars& scalars, bool check_finite,
                      bool* found_non_finite, cudaStream_t stream);

}  // namespace zt::cuda
