// Packed variable-length attention kernels (FlashAttention's varlen layout) on raw device
// pointers: q [total_tokens, num_heads, head_dim], k and v [total_tokens, num_kv_heads,
// head_dim], optional prefix_k/prefix_v [batch, prefix_len, num_kv_heads, head_dim], every
// array contiguous. Sequence b owns tokens cu_seqlens[b] .. cu_seqlens[b + 1] and sees its
// prefix rows first, then its own tokens (causally when asked). The S×S score matrix is
// never stored: blocks stream key (or query) tiles through shared memory with an online
// softmax, and the backward recomputes probabilities from the saved log-sum-exp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct AttentionDims {
  std::int64_t total_tokens = 0;
  int batch = 0;
  int num_heads = 0;
  int num_kv_heads = 0;  // divides num_heads
  int head_dim = 0;      // 1 .. 256
  int prefix_len = 0;    // 0 without a prefix
  int max_seqlen = 0;    // longest sequence; sizes the grid
  float softmax_scale = 0.0f;
  bool causal = true;
};

struct AttentionInputs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* prefix_k = nullptr;  // null when prefix_len is 0
  const void* prefix_v = nullptr;
  const std::int32_t* cu_seqlens = nullptr;  // device memory, batch + 1 entries
};

// out (q's dtype) and lse (float32 [total_tokens, num_heads]) fully written. dtype: float32,
// bfloat16 or float16, with fp32 accumulation; 16-bit runs round the probabilities to dtype
// before multiplying them by V, as FlashAttention does.
void attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out, float* lse,
                       cudaStream_t stream);

struct AttentionGradOutputs {
  void* grad_q = nullptr;
  void* grad_k = nullptr;
  void* grad_v = nullptr;
  void* grad_prefix_k = nullptr;  // null when prefix_len is 0
  void* grad_prefix_v = nullptr;
};

// Every gradient fully written, without atomics: one block owns each query tile (dQ) and
// each key tile (dK, dV and the prefix's), summing in a fixed order, so runs are bitwise
// reproducible. `delta` is float32 scratch of [total_tokens, num_heads] for rowsum(dO ∘ O).
void attention_backward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* out,
                        const void* grad_out, const float* lse, float* delta, const AttentionGradOutputs& grads,
                        cudaStream_t stream);

}  // namespace zt::cuda
