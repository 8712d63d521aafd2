// Tensor-core attention in the FlashAttention-2 scheme, on the same packed varlen layout and
// raw pointers as cuda/attention/attention_contract.cuh (see there and docs/ATTENTION.md): mma.sync m16n8k16
// products with fp32 accumulation, K/V (or Q/dO) tiles streamed through swizzled shared memory
// by cp.async with one tile in flight while the previous one is used, an online softmax in
// registers, and probabilities reused as the A operand of P·V without a shared-memory trip.
// The kernels cover bfloat16 and float16 with head_dim 64, 96 or 128 and a positive softmax
// scale; cuda/attention/simple/attention.cuh's kernels take everything else.
#pragma once

#include <cuda_runtime_api.h>

#include <initializer_list>

#include "cuda/attention/attention_contract.cuh"
#include "runtime/dtype.h"

namespace zt::cuda {

// Whether the tensor-core kernels take this call: dtype and dims as above, and every pointer
// (the inputs' and outputs' row starts) 16-byte aligned, since tiles move in 16-byte chunks.
bool flash_attention_supported(const AttentionDims& dims, DType dtype, std::initializer_list<const void*> pointers);

// out (dtype) and lse (float32 [total_tokens, num_heads]) fully written.
void flash_attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out,
                             float* lse, cudaStream_t stream);

// Scratch the backward needs, float32: delta [total_tokens, num_heads] for rowsum(dO ∘ O), and
// dq_accum [total_tokens, num_heads, head_dim] unless deterministic (then null).
struct FlashBackwardScratch {
  float* delta = nullptr;
  float* dq_accum = nullptr;
};

// Every gradient fully written. One block per (key tile, kv head, sequence) accumulates dK and
// dV over the queries of every head of the group, so no kv gradient is shared between blocks.
// dQ: atomically added into dq_accum by those blocks and then converted (fast; the order of the
// fp32 additions varies between runs), or with `deterministic` recomputed by a second kernel
// that owns each query tile and sums over key tiles in a fixed order (bitwise reproducible).
void flash_attention_backward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* out,
                              const void* grad_out, const float* lse, const FlashBackwardScratch& scratch,
                              const AttentionGradOutputs& grads, bool deterministic, cudaStream_t stream);

}  // namespace zt::cuda
