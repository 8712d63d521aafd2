// The simple attention kernels, on the packed layout of cuda/attention/attention_contract.cuh,
// for every dtype and head_dim the faster families leave out. The S×S score matrix is never
// stored: blocks stream key (or query) tiles through shared memory with an online
// softmax, and the backward recomputes probabilities from the saved log-sum-exp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/attention/attention_contract.cuh"
#include "runtime/dtype.h"

namespace zt::cuda {

// out (q's dtype) and lse (float32 [total_tokens, num_heads]) fully written. dtype: float32,
// bfloat16 or float16, with fp32 accumulation; 16-bit runs round the probabilities to dtype
// before multiplying them by V, as FlashAttention does.
void attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out, float* lse,
                       cudaStream_t stream);

// Every gradient fully written, without atomics: one block owns each query tile (dQ) and
// each key tile (dK, dV and the prefix's), summing in a fixed order, so runs are bitwise
// reproducible. `delta` is float32 scratch of [total_tokens, num_heads] for rowsum(dO ∘ O).
void attention_backward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* out,
                        const void* grad_out, const float* lse, float* delta, const AttentionGradOutputs& grads,
                        cudaStream_t stream);

}  // namespace zt::cuda
