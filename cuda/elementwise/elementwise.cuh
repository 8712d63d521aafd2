// Elementwise arithmetic on contiguous tensors, computed in float32 and rounded once to the
// dtype, as torch's 16-bit kernels do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

enum class BinaryOp { kAdd, kSub, kMul };

// out[i] = a[i] op b[i % b_numel] for i < n: b is either a's size (b_numel = n) or a block of
// a's trailing dims that repeats over the leading ones (n a multiple of b_numel).
void binary_elementwise(BinaryOp op, const void* a, const void* b, void* out, DType dtype, std::int64_t n,
                        std::int64_t b_numel, cudaStream_t stream);

// out[i] = x[i] * factor.
void scale_elementwise(const void* x, void* out, DType dtype, std::int64_t n, float factor, cudaStream_t stream);

}  // namespace zt::cuda
