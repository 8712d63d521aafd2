#include "models/decoder.h"

#include <cmath>

#include "autograd/functions.h"

namespace zt::models {
namespace {

using namespace autograd;

struct Qkv {
  Variable q, k, v;  // [tokens, heads, head_dim]
};

Qkv project_qkv(const ModelConfig& c, const LayerWeights& w, const Variable& h) {
  const std::int64_t tokens = h.data().size(0);
  Variable q, k, v;
  if (c.fused_qkv) {
    Variable qkv = linear(h, w[kQkv], w[kQkvBias]);
    q = narrow(qkv, 1, 0, c.q_size());
    k = narrow(qkv, 1, c.q_size(), c.kv_size());
    v = narrow(qkv, 1, c.q_size() + c.kv_size(), c.kv_size());
  } else {
    q = linear(h, w[kQ], w[kQBias]);
    k = linear(h, w[kK], w[kKBias]);
    v = linear(h, w[kV], w[kVBias]);
  }
  return {reshape(q, {tokens, c.num_heads, c.head_dim}), reshape(k, {tokens, c.num_kv_heads, c.head_dim}),
          reshape(v, {tokens, c.num_kv_heads, c.head_dim})};
}

Variable norm(const ModelConfig& c, const Variable& x, const Variable& weight) {
  return rmsnorm(x, weight, static_cast<float>(c.norm_eps), c.norm_style);
}

Variable self_attention(const ModelConfig& c, std::int64_t layer, const LayerWeights& w, const Variable& h,
                        const TokenLayout& tokens, KvCache* cache) {
  Qkv p = project_qkv(c, w, h);
  if (c.qk_norm) {
    p.q = norm(c, p.q, w[kQNorm]);
    p.k = norm(c, p.k, w[kKNorm]);
  }
  Variable q = rope(p.q, tokens.positions, c.rope);
  Variable k = rope(p.k, tokens.positions, c.rope);
  ops::AttentionConfig attention_config{1.0 / std::sqrt(static_cast<double>(c.head_dim)), true};
  Variable attended;
  if (cache != nullptr && cache->length() > 0) {
    attended = attention(q, k, p.v, tokens.cu_seqlens, attention_config, Variable(cache->keys(layer)),
                         Variable(cache->values(layer)));
  } else {
    attended = attention(q, k, p.v, tokens.cu_seqlens, attention_config, Variable(), Variable(), tokens.attn_impl);
  }
  if (cache != nullptr) cache->write(layer, k.data(), p.v.data());
  const std::int64_t count = h.data().size(0);
  Variable out = linear(reshape(attended, {count, c.q_size()}), w[kO], w[kOBias]);
  return c.sandwich_norms ? norm(c, out, w[kPostSelfAttnNorm]) : out;
}

Variable mlp(const ModelConfig& c, const LayerWeights& w, const Variable& h) {
  Variable activated = c.fused_gate_up ? swiglu_fused(linear(h, w[kGateUp], w[kGateUpBias]))
                                       : swiglu(linear(h, w[kGate]), linear(h, w[kUp]));
  Variable out = linear(activated, w[kDown], w[kDownBias]);
  return c.sandwich_norms ? norm(c, out, w[kPostMlpNorm]) : out;
}

}  // namespace

Variable decoder_layer(const ModelConfig& config, std::int64_t layer, const LayerWeights& weights, const Variable& x,
                       const TokenLayout& tokens, KvCache* cache) {
  Variable attended = self_attention(config, layer, weights, norm(config, x, weights[kInputNorm]), tokens, cache);
  Variable after_attention = residual_add(attended, x);
  return residual_add(mlp(config, weights, norm(config, after_attention, weights[kPostAttentionNorm])),
                      after_attention);
}

}  // namespace zt::models
