// Scaled dot-product attention over packed variable-length sequences, in FlashAttention's
// varlen layout: the tokens of every sequence of a batch lie back to back, and cu_seqlens
// says where each sequence starts. A token attends only within its own sequence (causal
// by default), to an optional per-sequence prefix (P-Tuning v2) first, with grouped-query
// heads indexing their shared kv head rather than copying it. See docs/ATTENTION.md.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace zt::ops {

struct AttentionConfig {
  double softmax_scale = 0.0;  // the caller's choice, usually 1 / sqrt(head_dim)
  bool causal = true;          // local position i sees its sequence's positions <= i
  // Backward on the GPU: bitwise reproducible gradients (dQ recomputed by a kernel that owns
  // each query tile) instead of the faster atomic accumulation of dQ, whose fp32 sums vary in
  // their last bits between runs. The CPU and the simple GPU kernels are deterministic anyway.
  bool deterministic = false;
};

// Prefix keys and values [batch, prefix_len, num_kv_heads, head_dim], seen by every query of
// sequence b before its own tokens. Both defined, or both undefined for no prefix.
struct AttentionPrefix {
  Tensor k;
  Tensor v;
};

struct AttentionOutput {
  Tensor out;  // [total_tokens, num_heads, head_dim], q's dtype
  Tensor lse;  // [total_tokens, num_heads] log-sum-exp of the scaled scores: float32 (float64 for float64 q)
};

// q [total_tokens, num_heads, head_dim]; k, v [total_tokens, num_kv_heads, head_dim] with
// num_heads a multiple of num_kv_heads (query head h reads kv head h / (num_heads / num_kv_heads));
// cu_seqlens int32 [batch + 1] on q's device: 0, l1, l1 + l2, ..., total_tokens (non-decreasing).
AttentionOutput attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                                  const AttentionConfig& config, const AttentionPrefix& prefix = {});

struct AttentionGrads {
  Tensor grad_q;
  Tensor grad_k;
  Tensor grad_v;
  Tensor grad_prefix_k;  // undefined without a prefix
  Tensor grad_prefix_v;
};

// Gradients of a loss through attention_forward, given its grad_out (out's shape) and the
// forward's out and lse. Probabilities are recomputed from lse; dS = P ∘ (dP − rowsum(dO ∘ O)).
// dK, dV and the prefix's are always summed in a fixed order; dQ too with config.deterministic.
AttentionGrads attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                  const AttentionConfig& config, const AttentionPrefix& prefix = {});

// Which of zerotune's kernels attention_forward and attention_backward run for a model's
// attention on `device`: "zerotune Hopper kernels (wgmma, TMA)" (compute capability 9.0 with
// this build's sm_90a code, bfloat16/float16, head_dim 64 or 128), "zerotune FlashAttention-2
// kernels" (other GPUs, or head_dim 96), "zerotune simple kernels" (anything else on the GPU) or
// "zerotune CPU kernels". The deterministic backward is always the FlashAttention-2 one.
std::string attention_kernel_name(Device device, DType dtype, std::int64_t head_dim);

}  // namespace zt::ops
