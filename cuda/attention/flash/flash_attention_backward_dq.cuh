// The two ways a backward finishes dQ: the deterministic kernel (see
// flash_attention_backward_dq.cu), called by flash_attention_backward once delta = rowsum(dO ∘ O)
// is computed, and the conversion of atomically summed fp32 dQ, shared with the Hopper backward.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/attention/attention_contract.cuh"
#include "runtime/dtype.h"

namespace zt::cuda::flash_detail {

// grad_q [total_tokens, num_heads, head_dim] (dtype) fully written.
void launch_flash_dq(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* grad_out,
                     const float* lse, const float* delta, void* grad_q, cudaStream_t stream);

// grad_q (dtype) = softmax_scale · dq_accum (fp32, same [total_tokens, num_heads, head_dim]).
void convert_dq_accum(const AttentionDims& dims, DType dtype, const float* dq_accum, void* grad_q, cudaStream_t stream);

}  // namespace zt::cuda::flash_detail
