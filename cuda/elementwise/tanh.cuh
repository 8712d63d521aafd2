// tanh on contiguous tensors, computed in float32 and rounded once to the dtype.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// out[i] = tanh(x[i]).
void tanh_forward(const void* x, void* out, DType dtype, std::int64_t n, cudaStream_t stream);
// grad_in[i] = grad_out[i] * (1 - out[i]²).
void tanh_backward(const void* grad_out, const void* out, void* grad_in, DType dtype, std::int64_t n,
                   cudaStream_t stream);

}  // namespace zt::cuda
