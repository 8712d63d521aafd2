// The per-step scalars of AdamW (cuda/optim/adamw.cuh's AdamWScalars), computed in double and
// rounded once to float, and the checks of a step's settings: shared by the CUDA kernels'
// dispatch, the CPU reference and the CPU Adam of optimizer offload, so all three update
// bit for bit alike.
#pragma once

#include "cuda/optim/adamw.cuh"
#include "ops/optim/adamw.h"

namespace zt::ops {

cuda::AdamWScalars adamw_scalars(const AdamWConfig& config);

// step counts from 1 and grad_scale is positive and finite, or a zt::Error naming `op`.
void check_adamw_config(const char* op, const AdamWConfig& config);

}  // namespace zt::ops
