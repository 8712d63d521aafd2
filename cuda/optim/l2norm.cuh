// The L2 norm of many tensors together, in few launches (multi-tensor apply, up to 48
// tensors a launch) and deterministic: every tensor is cut into fixed 64Ki-element chunks,
// each chunk's sum of squares is one float32 partial at a position fixed by the tensor list,
// and one block adds every partial in order, in float64, before the square root.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct L2NormTensor {
  const void* data = nullptr;  // n contiguous elements of dtype (float32, bfloat16, float16)
  DType dtype = DType::kF32;
  std::int64_t n = 0;
};

// out[0] = sqrt(sum over every tensor of x²), float32; 0 for no elements.
void l2_norm_multi(const L2NormTensor* tensors, std::size_t count, float* out, cudaStream_t stream);

}  // namespace zt::cuda
