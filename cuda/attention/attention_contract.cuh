// The contract every attention kernel family shares (simple/, flash/, hopper/; decode/ reads
// the same head layout): FlashAttention's packed variable-length layout on raw device
// pointers. q [total_tokens, num_heads, head_dim], k and v [total_tokens, num_kv_heads,
// head_dim], optional prefix_k/prefix_v [batch, prefix_len, num_kv_heads, head_dim], every
// array contiguous. Sequence b owns tokens cu_seqlens[b] .. cu_seqlens[b + 1] and sees its
// prefix rows first, then its own tokens (causally when asked); query head h reads kv head
// h / (num_heads / num_kv_heads). Each family's entry points take these types, so
// ops/attention/ describes a problem once and hands it to whichever kernel runs it.
#pragma once

#include <cstdint>

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

struct AttentionGradOutputs {
  void* grad_q = nullptr;
  void* grad_k = nullptr;
  void* grad_v = nullptr;
  void* grad_prefix_k = nullptr;  // null when prefix_len is 0
  void* grad_prefix_v = nullptr;
};

}  // namespace zt::cuda
