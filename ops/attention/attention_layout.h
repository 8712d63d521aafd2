// The checked sizes of one attention call, shared by the CPU reference and the CUDA
// dispatch so both read the packed layout the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/attention/attention.h"

namespace zt::ops::detail {

struct AttentionLayout {
  std::int64_t total_tokens = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t batch = 0;
  std::int64_t prefix_len = 0;  // 0 without a prefix
  std::int64_t max_seqlen = 0;
  std::vector<std::int32_t> cu_seqlens;  // host copy, batch + 1 entries

  std::int64_t group_size() const { return num_heads / num_kv_heads; }
  std::int64_t seq_start(std::int64_t b) const { return cu_seqlens[b]; }
  std::int64_t seq_len(std::int64_t b) const { return cu_seqlens[b + 1] - cu_seqlens[b]; }
};

// Checks q, k, v, cu_seqlens, the prefix and the config (throwing zt::Error that names the
// op, the arguments and both values) and returns the layout they describe.
AttentionLayout check_attention_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& cu_seqlens, const AttentionConfig& config,
                                       const AttentionPrefix& prefix);

// Checks grad_out, out and lse against the layout of the forward inputs.
void check_attention_saved(const char* op, const Tensor& grad_out, const Tensor& out, const Tensor& lse,
                           const Tensor& q, const AttentionLayout& layout);

}  // namespace zt::ops::detail
