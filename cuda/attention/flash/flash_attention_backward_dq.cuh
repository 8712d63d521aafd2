// The deterministic backward's dQ kernel (see flash_attention_backward_dq.cu), called by
// flash_attention_backward once delta = rowsum(dO ∘ O) is computed.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/attention/simple/attention.cuh"
#include "runtime/dtype.h"

namespace zt::cuda::flash_detail {

// grad_q [total_tokens, num_heads, head_dim] (dtype) fully written.
void launch_flash_dq(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* grad_out,
                     const float* lse, const float* delta, void* grad_q, cudaStream_t stream);

}  // namespace zt::cuda::flash_detail
