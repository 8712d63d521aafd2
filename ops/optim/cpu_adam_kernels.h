// The CPU Adam's inner loops over one contiguous range, one set per instruction set: plain
// C++, AVX2 (+F16C) and AVX-512F, each compiled for its target by function attribute so the
// binary still runs on CPUs without them; ops/optim/cpu_adam.cpp picks one at run time. Every
// path performs adamw_step's float operations in its order, one rounding each (no fused
// multiply-add), so all of them match the CPU reference bit for bit.
#pragma once

#include <cstdint>

#include "cuda/optim/adamw.cuh"
#include "runtime/dtype.h"

namespace zt::ops::cpu_adam {

// n contiguous elements of one parameter. working (bfloat16/float16/float32) may be null.
struct Range {
  float* master = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  const float* grad = nullptr;
  void* working = nullptr;
  DType working_dtype = DType::kF32;
  std::int64_t n = 0;
  float decay_factor = 1.0f;  // 1 - lr * weight_decay
};

using UpdateFn = void (*)(const Range& range, const cuda::AdamWScalars& s);
using ScanFn = bool (*)(const float* values, std::int64_t n);  // true when any is inf or NaN

void update_scalar(const Range& range, const cuda::AdamWScalars& s);
bool any_non_finite_scalar(const float* values, std::int64_t n);
void update_avx2(const Range& range, const cuda::AdamWScalars& s);
bool any_non_finite_avx2(const float* values, std::int64_t n);
void update_avx512(const Range& range, const cuda::AdamWScalars& s);
bool any_non_finite_avx512(const float* values, std::int64_t n);

}  // namespace zt::ops::cpu_adam
