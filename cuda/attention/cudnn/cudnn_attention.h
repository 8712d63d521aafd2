// Scaled dot-product flash attention through cuDNN's graph API: forward (out and the
// log-sum-exp statistics) and backward, bfloat16/float16 in, float32 statistics, causal or
// full, grouped-query heads (num_kv_heads dividing num_heads) read without copies.
//
// Tokens are packed as ops/attention/attention.h describes: q/out [tokens, num_heads, head_dim], k/v
// [tokens, num_kv_heads, head_dim], contiguous, every pointer 16-byte aligned. Two layouts:
//   - dense: `batch` sequences of exactly max_seqlen tokens (tokens = batch · max_seqlen);
//     stats is [batch, num_heads, max_seqlen] float32.
//   - ragged: sequence b has seq_len[b] <= max_seqlen tokens starting at token start[b];
//     stats is [tokens, num_heads] float32 (the packed layout ops/attention/attention.h's lse has).
// Built plans are cached per thread and device by shape, so a shape pays its graph build once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct CudnnAttentionShape {
  DType dtype = DType::kBF16;  // bfloat16 or float16
  std::int64_t batch = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t max_seqlen = 0;
  bool causal = true;
  bool ragged = false;
  bool deterministic = false;  // backward: dQ without atomics (more workspace)
};

// Ragged layout only (all null when dense): device int32 arrays. seq_len [batch] holds each
// sequence's length; the offsets [batch + 1] hold start[b] · num_heads · head_dim (q, out),
// start[b] · num_kv_heads · head_dim (k, v) and start[b] · num_heads (stats), in elements.
struct CudnnAttentionRagged {
  const std::int32_t* seq_len = nullptr;
  const std::int32_t* offsets_q = nullptr;
  const std::int32_t* offsets_kv = nullptr;
  const std::int32_t* offsets_stats = nullptr;
};

struct CudnnAttentionForwardArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  float* stats = nullptr;
  float softmax_scale = 1.0f;
  CudnnAttentionRagged ragged;
};

struct CudnnAttentionBackwardArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* out = nullptr;
  const void* grad_out = nullptr;
  const float* stats = nullptr;
  void* grad_q = nullptr;
  void* grad_k = nullptr;
  void* grad_v = nullptr;
  float softmax_scale = 1.0f;
  CudnnAttentionRagged ragged;
};

// Throws zt::Error naming the failing check or cuDNN call (and suggesting attn_impl=zerotune)
// when the shape is outside what cuDNN takes or a graph, plan or launch fails.
void cudnn_attention_forward(const CudnnAttentionShape& shape, const CudnnAttentionForwardArgs& args,
                             cudaStream_t stream);
void cudnn_attention_backward(const CudnnAttentionShape& shape, const CudnnAttentionBackwardArgs& args,
                              cudaStream_t stream);

}  // namespace zt::cuda
