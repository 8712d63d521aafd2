#include "models/small_m_decoder.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "ops/gemv/gemv.h"
#include "ops/norm/rmsnorm.h"
#include "ops/rope/rope.h"

namespace zt::models {
namespace {

Tensor value_of(const Variable& v) { return v.defined() ? v.data() : Tensor(); }

// A linear whose input is rmsnorm(x, norm_weight): the prologue of q/k/v and of gate/up.
ops::SmallMLinearOptions normed_by(const ModelConfig& c, const Variable& norm_weight, const Variable& bias) {
  ops::SmallMLinearOptions options;
  options.prologue = ops::SmallMPrologue::kRmsNorm;
  options.norm_weight = norm_weight.data();
  options.eps = static_cast<float>(c.norm_eps);
  options.norm_style = c.norm_style;
  options.bias = value_of(bias);
  return options;
}

struct Qkv {
  Tensor q, k, v;  // [tokens, heads, head_dim]
};

Qkv project_qkv(const ModelConfig& c, const LayerWeights& w, const Tensor& x) {
  const std::int64_t tokens = x.size(0);
  Tensor q, k, v;
  if (c.fused_qkv) {
    const Tensor qkv = ops::small_m_linear(x, w[kQkv].data(), normed_by(c, w[kInputNorm], w[kQkvBias]));
    q = qkv.narrow(1, 0, c.q_size()).contiguous();
    k = qkv.narrow(1, c.q_size(), c.kv_size()).contiguous();
    v = qkv.narrow(1, c.q_size() + c.kv_size(), c.kv_size()).contiguous();
  } else {
    q = ops::small_m_linear(x, w[kQ].data(), normed_by(c, w[kInputNorm], w[kQBias]));
    k = ops::small_m_linear(x, w[kK].data(), normed_by(c, w[kInputNorm], w[kKBias]));
    v = ops::small_m_linear(x, w[kV].data(), normed_by(c, w[kInputNorm], w[kVBias]));
  }
  Qkv out{q.view({tokens, c.num_heads, c.head_dim}), k.view({tokens, c.num_kv_heads, c.head_dim}),
          v.view({tokens, c.num_kv_heads, c.head_dim})};
  if (c.qk_norm) {
    const auto eps = static_cast<float>(c.norm_eps);
    out.q = ops::rmsnorm_forward(out.q, w[kQNorm].data(), eps, c.norm_style).y;
    out.k = ops::rmsnorm_forward(out.k, w[kKNorm].data(), eps, c.norm_style).y;
  }
  return out;
}

// The MLP with its input norm in front and the residual `h` added behind.
Tensor mlp(const ModelConfig& c, const LayerWeights& w, const Tensor& h) {
  ops::SmallMLinearOptions down;
  down.prologue = ops::SmallMPrologue::kSwiglu;
  down.bias = value_of(w[kDownBias]);
  down.residual = h;
  Tensor gate;
  if (c.fused_gate_up) {
    gate = ops::small_m_linear(h, w[kGateUp].data(), normed_by(c, w[kPostAttentionNorm], w[kGateUpBias]));
  } else {
    gate = ops::small_m_linear(h, w[kGate].data(), normed_by(c, w[kPostAttentionNorm], Variable()));
    down.up = ops::small_m_linear(h, w[kUp].data(), normed_by(c, w[kPostAttentionNorm], Variable()));
  }
  return ops::small_m_linear(gate, w[kDown].data(), down);
}

}  // namespace

bool small_m_layer_applies(const ModelConfig& config, const LayerParameters& parameters, const Variable& x,
                           const TokenLayout& tokens, const KvCache* cache) {
  return tokens.small_m_layers && cache != nullptr && !autograd::grad_enabled() &&
         x.data().size(0) <= ops::kSmallMMaxRows && parameters.lora == nullptr && parameters.held_weights == nullptr &&
         parameters.reduce_partial_sums == nullptr && parameters.record.recorder == nullptr && !config.sandwich_norms;
}

Variable small_m_decoder_layer(const ModelConfig& config, std::int64_t layer, const LayerParameters& parameters,
                               const Variable& x, const TokenLayout& tokens, KvCache& cache) {
  const LayerWeights& w = *parameters.weights;
  const Tensor residual = x.data();
  const Qkv p = project_qkv(config, w, residual);
  const Tensor q = ops::rope_forward(p.q, tokens.positions, config.rope);
  const Tensor k = ops::rope_forward(p.k, tokens.positions, config.rope);
  const Tensor attended =
      cache.attend(layer, q, k, p.v, tokens.cu_seqlens, 1.0 / std::sqrt(static_cast<double>(config.head_dim)));
  ops::SmallMLinearOptions output;
  output.bias = value_of(w[kOBias]);
  output.residual = residual;
  const Tensor h = ops::small_m_linear(attended.reshape({residual.size(0), config.q_size()}), w[kO].data(), output);
  return Variable(mlp(config, w, h));
}

}  // namespace zt::models
