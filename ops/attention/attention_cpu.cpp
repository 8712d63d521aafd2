#include "ops/attention/attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace zt::ops::detail {
namespace {

template <typename Acc>
std::vector<Acc> host_values(const Tensor& t) {
  if (!t.defined()) return {};
  std::vector<double> values = t.to_vector();
  return std::vector<Acc>(values.begin(), values.end());
}

template <typename Acc>
Tensor to_tensor(const std::vector<Acc>& values, const Shape& shape, DType dtype) {
  return Tensor::from_values(std::vector<double>(values.begin(), values.end()), shape, dtype);
}

// Torch's math path stores the softmax in the inputs' dtype before multiplying by V; a 16-bit
// run therefore rounds the probabilities to it.
template <typename Acc>
Acc round_probability(DType dtype, Acc p) {
  if constexpr (std::is_same_v<Acc, float>) {
    if (dtype == DType::kBF16) return bf16_bits_to_float(float_to_bf16_bits(p));
    if (dtype == DType::kF16) return half_bits_to_float(float_to_half_bits(p));
  }
  return p;
}

template <typename Acc>
Acc dot(const Acc* a, const Acc* b, std::int64_t n) {
  Acc sum = 0;
  for (std::int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// Where unified key j of sequence b lies: j < prefix_len is prefix row j, the rest the
// sequence's own tokens; `offset` indexes the prefix arrays or the token arrays accordingly.
struct KeyRef {
  bool in_prefix;
  std::int64_t offset;
};

// The inputs as host arrays in the accumulation type, addressed through the packed layout.
template <typename Acc>
struct HostAttention {
  const AttentionLayout& layout;
  Acc scale;
  bool causal;
  std::vector<Acc> q, k, v, prefix_k, prefix_v;

  std::int64_t head_offset(std::int64_t token, std::int64_t h) const {
    return (token * layout.num_heads + h) * layout.head_dim;
  }
  KeyRef key(std::int64_t b, std::int64_t j, std::int64_t g) const {
    const std::int64_t p = layout.prefix_len, kv = layout.num_kv_heads, d = layout.head_dim;
    if (j < p) return {true, ((b * p + j) * kv + g) * d};
    return {false, ((layout.seq_start(b) + j - p) * kv + g) * d};
  }
  // Prefix keys come first, so with causal masking query i sees the first prefix_len + i + 1.
  std::int64_t visible_keys(std::int64_t b, std::int64_t i) const {
    return layout.prefix_len + (causal ? i + 1 : layout.seq_len(b));
  }
  const Acc* keys_at(KeyRef ref) const { return (ref.in_prefix ? prefix_k.data() : k.data()) + ref.offset; }
  const Acc* values_at(KeyRef ref) const { return (ref.in_prefix ? prefix_v.data() : v.data()) + ref.offset; }

  // The scaled scores of query (b, i, h) against every key it sees.
  void scores(std::int64_t b, std::int64_t i, std::int64_t h, std::vector<Acc>& s) const {
    const Acc* query = q.data() + head_offset(layout.seq_start(b) + i, h);
    const std::int64_t g = h / layout.group_size();
    s.resize(static_cast<std::size_t>(visible_keys(b, i)));
    for (std::size_t j = 0; j < s.size(); ++j) s[j] = scale * dot(query, keys_at(key(b, j, g)), layout.head_dim);
  }
};

template <typename Acc>
HostAttention<Acc> host_attention(const AttentionLayout& layout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionConfig& config, const AttentionPrefix& prefix) {
  return {layout,
          static_cast<Acc>(config.softmax_scale),
          config.causal,
          host_values<Acc>(q),
          host_values<Acc>(k),
          host_values<Acc>(v),
          host_values<Acc>(prefix.k),
          host_values<Acc>(prefix.v)};
}

template <typename Acc>
Acc log_sum_exp(const std::vector<Acc>& s) {
  Acc max = -std::numeric_limits<Acc>::infinity();
  for (Acc x : s) max = std::max(max, x);
  Acc sum = 0;
  for (Acc x : s) sum += std::exp(x - max);
  return max + std::log(sum);
}

template <typename Acc>
AttentionOutput forward(const HostAttention<Acc>& a, const Tensor& q) {
  const AttentionLayout& L = a.layout;
  std::vector<Acc> out(static_cast<std::size_t>(q.numel())),
      lse(static_cast<std::size_t>(L.total_tokens * L.num_heads));
  std::vector<Acc> s;
  for (std::int64_t b = 0; b < L.batch; ++b)
    for (std::int64_t i = 0; i < L.seq_len(b); ++i)
      for (std::int64_t h = 0; h < L.num_heads; ++h) {
        const std::int64_t token = L.seq_start(b) + i, g = h / L.group_size();
        a.scores(b, i, h, s);
        const Acc row_lse = log_sum_exp(s);
        Acc* o = out.data() + a.head_offset(token, h);
        for (std::size_t j = 0; j < s.size(); ++j) {
          const Acc p = round_probability(q.dtype(), std::exp(s[j] - row_lse));
          const Acc* value = a.values_at(a.key(b, j, g));
          for (std::int64_t d = 0; d < L.head_dim; ++d) o[d] += p * value[d];
        }
        lse[token * L.num_heads + h] = row_lse;
      }
  DType lse_dtype = q.dtype() == DType::kF64 ? DType::kF64 : DType::kF32;
  return {to_tensor(out, q.shape(), q.dtype()), to_tensor(lse, {L.total_tokens, L.num_heads}, lse_dtype)};
}

// Gradient accumulators with the inputs' layout.
template <typename Acc>
struct HostGrads {
  std::vector<Acc> q, k, v, prefix_k, prefix_v;
  Acc* keys_at(KeyRef ref) { return (ref.in_prefix ? prefix_k.data() : k.data()) + ref.offset; }
  Acc* values_at(KeyRef ref) { return (ref.in_prefix ? prefix_v.data() : v.data()) + ref.offset; }
};

template <typename Acc>
void backward_row(const HostAttention<Acc>& a, std::int64_t b, std::int64_t i, std::int64_t h, const Acc* grad_out,
                  const Acc* out, Acc lse, HostGrads<Acc>& grads, std::vector<Acc>& s) {
  const AttentionLayout& L = a.layout;
  const std::int64_t g = h / L.group_size(), row = a.head_offset(L.seq_start(b) + i, h), dim = L.head_dim;
  const Acc* query = a.q.data() + row;
  Acc* grad_query = grads.q.data() + row;
  const Acc delta = dot(grad_out, out, dim);
  a.scores(b, i, h, s);
  for (std::size_t j = 0; j < s.size(); ++j) {
    const KeyRef ref = a.key(b, j, g);
    const Acc p = std::exp(s[j] - lse);
    const Acc ds = p * (dot(grad_out, a.values_at(ref), dim) - delta);
    const Acc* key = a.keys_at(ref);
    Acc* grad_key = grads.keys_at(ref);
    Acc* grad_value = grads.values_at(ref);
    for (std::int64_t d = 0; d < dim; ++d) {
      grad_query[d] += a.scale * ds * key[d];
      grad_key[d] += a.scale * ds * query[d];
      grad_value[d] += p * grad_out[d];
    }
  }
}

template <typename Acc>
AttentionGrads backward(const HostAttention<Acc>& a, const Tensor& grad_out, const Tensor& out, const Tensor& lse,
                        const Tensor& q, const Tensor& k, const AttentionPrefix& prefix) {
  const AttentionLayout& L = a.layout;
  const std::vector<Acc> dout = host_values<Acc>(grad_out), o = host_values<Acc>(out), row_lse = host_values<Acc>(lse);
  HostGrads<Acc> grads{std::vector<Acc>(a.q.size()), std::vector<Acc>(a.k.size()), std::vector<Acc>(a.v.size()),
                       std::vector<Acc>(a.prefix_k.size()), std::vector<Acc>(a.prefix_v.size())};
  std::vector<Acc> s;
  for (std::int64_t b = 0; b < L.batch; ++b)
    for (std::int64_t i = 0; i < L.seq_len(b); ++i)
      for (std::int64_t h = 0; h < L.num_heads; ++h) {
        const std::int64_t token = L.seq_start(b) + i, row = a.head_offset(token, h);
        backward_row(a, b, i, h, dout.data() + row, o.data() + row, row_lse[token * L.num_heads + h], grads, s);
      }
  AttentionGrads result;
  result.grad_q = to_tensor(grads.q, q.shape(), q.dtype());
  result.grad_k = to_tensor(grads.k, k.shape(), k.dtype());
  result.grad_v = to_tensor(grads.v, k.shape(), k.dtype());
  if (prefix.k.defined()) {
    result.grad_prefix_k = to_tensor(grads.prefix_k, prefix.k.shape(), prefix.k.dtype());
    result.grad_prefix_v = to_tensor(grads.prefix_v, prefix.k.shape(), prefix.k.dtype());
  }
  return result;
}

}  // namespace

AttentionOutput attention_forward_cpu(const AttentionLayout& layout, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionConfig& config, const AttentionPrefix& prefix) {
  if (q.dtype() == DType::kF64) return forward(host_attention<double>(layout, q, k, v, config, prefix), q);
  return forward(host_attention<float>(layout, q, k, v, config, prefix), q);
}

AttentionGrads attention_backward_cpu(const AttentionLayout& layout, const Tensor& grad_out, const Tensor& q,
                                      const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                      const AttentionConfig& config, const AttentionPrefix& prefix) {
  if (q.dtype() == DType::kF64)
    return backward(host_attention<double>(layout, q, k, v, config, prefix), grad_out, out, lse, q, k, prefix);
  return backward(host_attention<float>(layout, q, k, v, config, prefix), grad_out, out, lse, q, k, prefix);
}

}  // namespace zt::ops::detail
