// Attention for Hopper (sm_90a) in the FlashAttention-3 scheme, on the packed varlen layout and
// raw pointers of cuda/attention/attention_contract.cuh: tiles arrive by TMA bulk copies into
// 128-byte-swizzled shared memory, one producer warpgroup keeps a ring of K and V tiles full
// while two consumer warpgroups (64 query rows each) multiply with wgmma straight from shared
// memory, and each consumer overlaps the next tile's S = Q·Kᵀ with the current tile's softmax
// and P·V. bfloat16/float16, head_dim 64 or 128, positive softmax scale, 16-byte aligned rows,
// on a compute-capability-9.0 GPU with this binary's sm_90a code; cuda/attention/flash/ takes
// everything else.
#pragma once

#include <cuda_runtime_api.h>

#include <initializer_list>

#include "cuda/attention/attention_contract.cuh"
#include "runtime/dtype.h"

namespace zt::cuda {

// Whether the Hopper kernels (forward and backward) take this call (dtype, head_dim, scale, every pointer 16-byte
// aligned, and the GPU as above).
bool hopper_attention_supported(const AttentionDims& dims, DType dtype, std::initializer_list<const void*> pointers);

// out (dtype) and lse (float32 [total_tokens, num_heads]) fully written, as
// flash_attention_forward.
void hopper_attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out,
                              float* lse, cudaStream_t stream);

// Scratch the backward needs, float32: lse_log2 and delta [num_heads][total_tokens], dq_accum
// [total_tokens, num_heads, head_dim].
struct HopperBackwardScratch {
  float* lse_log2 = nullptr;
  float* delta = nullptr;
  float* dq_accum = nullptr;
  float* key_sums = nullptr;  // hopper_backward_key_sum_floats(dims) floats, or null
};

// How many shares a GQA group's heads are split into over the backward's blocks (1: none).
int hopper_backward_head_splits(const AttentionDims& dims);

// The floats of HopperBackwardScratch::key_sums the backward uses for dims (fp32 dK and dV
// [total_tokens, num_kv_heads, head_dim] each) when it splits a GQA group's heads over
// blocks, 0 when it does not. Without them it never splits.
std::int64_t hopper_backward_key_sum_floats(const AttentionDims& dims);

// Every gradient fully written, as flash_attention_backward with its atomic dQ: one block per
// (key tile, kv head, share of the group's heads, sequence) computes dK and dV over its
// heads (whole rows when it has them all, else added in fp32 into key_sums and converted), dQ is
// added in fp32 (the order of the additions varies between runs) and converted. Deterministic
// runs use flash_attention_backward.
void hopper_attention_backward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* out,
                               const void* grad_out, const float* lse, const HopperBackwardScratch& scratch,
                               const AttentionGradOutputs& grads, cudaStream_t stream);

}  // namespace zt::cuda
