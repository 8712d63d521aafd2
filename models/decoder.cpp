#include "models/decoder.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "ops/gemm/linear.h"
#include "ops/gemm/lora_linear.h"
#include "ops/norm/rmsnorm.h"
#include "runtime/error.h"

namespace zt::models {
namespace {

using namespace autograd;

struct Qkv {
  Variable q, k, v;  // [tokens, heads, head_dim]
};

// The layer of weight slot `slot` (with its bias slot's bias when the layer has one) and the
// LoRA update beside it, when its GEMMs can carry the update (ops/gemm/lora_linear.h): always
// but for LoRA dropout in training, which needs ops of its own.
std::optional<Projection> fusable_projection(const LayerParameters& p, int slot, int bias_slot) {
  const LayerWeights& w = *p.weights;
  Projection layer{.weight = w[slot], .bias = bias_slot >= 0 ? w[bias_slot] : Variable()};
  if (p.lora == nullptr || !(*p.lora)[slot]) return layer;
  const LoraUpdate& update = *(*p.lora)[slot];
  if (update.dropout != 0.0 && p.training) return std::nullopt;
  layer.lora_a = update.a;
  layer.lora_b = update.b;
  layer.lora_scale = update.scale;
  return layer;
}

// The projection of a weight the gatherer holds (a 4-bit weight on a decode step, no
// gradient): its product read from the weight as held, the LoRA update added as lora_linear
// adds it. Nothing for a weight held dense.
std::optional<Variable> held_projection(const LayerParameters& p, const Variable& h, int slot, int bias_slot) {
  if (p.held_weights == nullptr) return std::nullopt;
  const Tensor bias = bias_slot >= 0 && (*p.weights)[bias_slot].defined() ? (*p.weights)[bias_slot].data() : Tensor();
  std::optional<Tensor> y = p.held_weights->held_linear((*p.weights)[slot], h.data(), bias);
  if (!y) return std::nullopt;
  if (p.lora != nullptr && (*p.lora)[slot]) {
    const LoraUpdate& update = *(*p.lora)[slot];
    ops::add_lora_update(*y, h.data(), update.a.data(), update.b.data(), update.scale);
  }
  return Variable(*y);
}

// The projection of weight slot `slot` plus the LoRA update sitting beside it.
Variable project(const LayerParameters& p, const Variable& h, int slot, int bias_slot) {
  if (std::optional<Variable> held = held_projection(p, h, slot, bias_slot)) return *held;
  if (std::optional<Projection> layer = fusable_projection(p, slot, bias_slot))
    return layer->lora_a.defined()
               ? lora_linear(h, layer->weight, layer->bias, layer->lora_a, layer->lora_b, layer->lora_scale)
               : linear(h, layer->weight, layer->bias);
  const Variable bias = bias_slot >= 0 ? (*p.weights)[bias_slot] : Variable();
  return add(linear(h, (*p.weights)[slot], bias), lora_delta(h, *(*p.lora)[slot], p.training));
}

// Projections of one input by (weight slot, bias slot): one op summing their input gradients
// in its GEMMs when every one is fusable, each its own op otherwise.
std::vector<Variable> project_each(const LayerParameters& p, const Variable& h,
                                   const std::vector<std::pair<int, int>>& slots) {
  std::vector<Projection> layers;
  for (const auto& [slot, bias_slot] : slots)
    if (std::optional<Projection> layer = fusable_projection(p, slot, bias_slot)) layers.push_back(*layer);
  if (layers.size() == slots.size() && p.held_weights == nullptr) return projections(h, layers);
  std::vector<Variable> outputs;
  for (const auto& [slot, bias_slot] : slots) outputs.push_back(project(p, h, slot, bias_slot));
  return outputs;
}

// The weights of `slots` (with `bias_slots`' biases, when the layer has them) as one matrix,
// when the model allocated them together (models/model.cpp) and one product gives what the
// separate ones would: no gradient recorded (backward would need a weight gradient per slot)
// and not training, no LoRA update beside any of them, the weights held dense, every bias slot
// filled or none. Each output column is the same dot product either way. nullopt: project
// each.
struct JoinedWeight {
  Tensor weight, bias;
};
std::optional<JoinedWeight> joined_weight(const LayerParameters& p, std::initializer_list<int> slots,
                                          std::initializer_list<int> bias_slots) {
  // Training, even in a checkpoint's first pass without gradients, keeps the separate GEMMs, so
  // the recompute and a plain run multiply exactly as it did.
  if (p.training || grad_enabled() || p.held_weights != nullptr) return std::nullopt;
  const LayerWeights& w = *p.weights;
  auto parts = [&](std::initializer_list<int> of) {
    std::vector<Tensor> tensors;
    for (int slot : of) {
      if (!w[slot].defined() || (p.lora != nullptr && (*p.lora)[slot])) return std::vector<Tensor>();
      tensors.push_back(w[slot].data());
    }
    return tensors;
  };
  const std::optional<Tensor> weight = Tensor::adjacent_rows(parts(slots));
  if (!weight) return std::nullopt;
  JoinedWeight joined{*weight, Tensor()};
  const auto biased = std::count_if(bias_slots.begin(), bias_slots.end(), [&](int slot) { return w[slot].defined(); });
  if (biased > 0) {
    const std::optional<Tensor> joined_bias = Tensor::adjacent_rows(parts(bias_slots));
    if (!joined_bias || biased != static_cast<std::ptrdiff_t>(bias_slots.size())) return std::nullopt;
    joined.bias = *joined_bias;
  }
  return joined;
}

std::optional<Variable> joined_projection(const LayerParameters& p, const Variable& h, std::initializer_list<int> slots,
                                          std::initializer_list<int> bias_slots) {
  const std::optional<JoinedWeight> joined = joined_weight(p, slots, bias_slots);
  if (!joined) return std::nullopt;
  return Variable(ops::linear_forward(h.data(), joined->weight, joined->bias));
}

// A row-parallel projection's partial output summed over the tensor-parallel ranks, before any
// norm or residual reads it. The in-place sum is not differentiated: inference only.
Variable summed_over_ranks(const LayerParameters& p, const Variable& partial) {
  if (p.reduce_partial_sums == nullptr) return partial;
  ZT_REQUIRE(!grad_enabled(), "a tensor-parallel shard runs without gradients (inference only)");
  (*p.reduce_partial_sums)(partial.data());
  return partial;
}

Qkv project_qkv(const ModelConfig& c, const LayerParameters& p, const Variable& h) {
  const std::int64_t tokens = h.data().size(0);
  Variable q, k, v;
  const std::optional<Variable> qkv =
      c.fused_qkv ? project(p, h, kQkv, kQkvBias) : joined_projection(p, h, {kQ, kK, kV}, {kQBias, kKBias, kVBias});
  if (qkv) {
    q = narrow(*qkv, 1, 0, c.q_size());
    k = narrow(*qkv, 1, c.q_size(), c.kv_size());
    v = narrow(*qkv, 1, c.q_size() + c.kv_size(), c.kv_size());
  } else {
    std::vector<Variable> qkv = project_each(p, h, {{kQ, kQBias}, {kK, kKBias}, {kV, kVBias}});
    q = qkv[0];
    k = qkv[1];
    v = qkv[2];
  }
  p.record("self_attn.q_proj", q);
  p.record("self_attn.k_proj", k);
  p.record("self_attn.v_proj", v);
  return {reshape(q, {tokens, c.num_heads, c.head_dim}), reshape(k, {tokens, c.num_kv_heads, c.head_dim}),
          reshape(v, {tokens, c.num_kv_heads, c.head_dim})};
}

Variable norm(const ModelConfig& c, const Variable& x, const Variable& weight) {
  return rmsnorm(x, weight, static_cast<float>(c.norm_eps), c.norm_style);
}

// The residual add and the norm that reads it, one fused kernel each way, bit for bit as the
// pair: a decode step is bound by its kernel count, a training step saves the add's pass and
// the engine's sum of the two gradients the sum receives.
NormedSum add_then_norm(const ModelConfig& c, const Variable& x, const Variable& residual, const Variable& weight) {
  std::vector<Variable> fused = residual_rmsnorm(x, residual, weight, static_cast<float>(c.norm_eps), c.norm_style);
  return {fused[0], fused[1]};
}

// Attention over the whole sequences of a batch stored with shared prefixes (models/batch.h):
// q, k and v gathered into the whole sequences, their outputs gathered back to the packed rows.
// The shared rows' queries run twice, once in each sequence; only the packed rows' outputs are kept.
Variable attention_of_whole_sequences(const Variable& q, const Variable& k, const Variable& v,
                                      const TokenLayout& tokens, const ops::AttentionConfig& config) {
  const SharedPrefixes& shared = tokens.shared;
  auto expand = [&](const Variable& x) {
    const Shape& s = x.data().shape();
    const Variable rows = gather_rows(reshape(x, {s[0], s[1] * s[2]}), shared.expand);
    return reshape(rows, {rows.data().size(0), s[1], s[2]});
  };
  const Variable whole =
      attention(expand(q), expand(k), expand(v), shared.cu_seqlens, config, Variable(), Variable(), tokens.attn_impl);
  const Shape& s = whole.data().shape();
  const Variable kept = gather_rows(reshape(whole, {s[0], s[1] * s[2]}), shared.compact);
  return reshape(kept, {kept.data().size(0), s[1], s[2]});
}

// The attention's heads [tokens, heads, head_dim] through the output projection (and GLM-4's
// post-attention norm).
Variable attention_output(const ModelConfig& c, const LayerParameters& parameters, const Variable& attended) {
  const std::int64_t count = attended.data().size(0);
  Variable out = summed_over_ranks(
      parameters,
      project(parameters, parameters.record("self_attn.attn_out", reshape(attended, {count, c.q_size()})), kO, kOBias));
  parameters.record("self_attn", out);
  const LayerWeights& w = *parameters.weights;
  return c.sandwich_norms ? parameters.record("post_self_attn_layernorm", norm(c, out, w[kPostSelfAttnNorm])) : out;
}

// The attention of an unrecorded step whose q/k/v product, RoPE and cache write the cache runs as
// one launch (KvCache::attend_projected: a decode step on the GPU): q, k and v one joined weight,
// no q/k norm between the product and the rotation. nullopt: the layer projects as usual.
std::optional<Tensor> attended_from_joined_qkv(const ModelConfig& c, std::int64_t layer, const LayerParameters& p,
                                               const Variable& h, const TokenLayout& tokens, KvCache& cache,
                                               double softmax_scale) {
  if (c.qk_norm || p.record.recorder != nullptr) return std::nullopt;
  const std::optional<JoinedWeight> joined =
      c.fused_qkv ? joined_weight(p, {kQkv}, {kQkvBias}) : joined_weight(p, {kQ, kK, kV}, {kQBias, kKBias, kVBias});
  if (!joined) return std::nullopt;
  return cache.attend_projected(layer, h.data(), joined->weight, joined->bias, tokens.positions, tokens.cu_seqlens,
                                softmax_scale);
}

Variable self_attention(const ModelConfig& c, std::int64_t layer, const LayerParameters& parameters, const Variable& h,
                        const TokenLayout& tokens, KvCache* cache) {
  const LayerWeights& w = *parameters.weights;
  const double softmax_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  if (cache != nullptr)
    if (std::optional<Tensor> attended =
            attended_from_joined_qkv(c, layer, parameters, h, tokens, *cache, softmax_scale))
      return attention_output(c, parameters, Variable(*attended));
  Qkv p = project_qkv(c, parameters, h);
  if (c.qk_norm) {
    p.q = norm(c, p.q, w[kQNorm]);
    p.k = norm(c, p.k, w[kKNorm]);
    parameters.record("self_attn.q_norm", p.q);
    parameters.record("self_attn.k_norm", p.k);
  }
  ops::AttentionConfig attention_config{softmax_scale, true};
  attention_config.deterministic = tokens.deterministic_attention;
  // Unrecorded, the cache rotates q and k as it stores k and v (one pass on the GPU).
  if (cache != nullptr && parameters.record.recorder == nullptr)
    return attention_output(
        c, parameters,
        Variable(cache->attend_unrotated(layer, p.q.data(), p.k.data(), p.v.data(), tokens.positions, c.rope,
                                         tokens.cu_seqlens, attention_config.softmax_scale)));
  Variable q = rope(p.q, tokens.positions, c.rope);
  Variable k = rope(p.k, tokens.positions, c.rope);
  parameters.record("self_attn.rope_q", q);
  parameters.record("self_attn.rope_k", k);
  Variable attended;
  if (cache != nullptr) {
    attended = Variable(
        cache->attend(layer, q.data(), k.data(), p.v.data(), tokens.cu_seqlens, attention_config.softmax_scale));
  } else if (parameters.prefix != nullptr) {
    attended =
        attention(q, k, p.v, tokens.cu_seqlens, attention_config, parameters.prefix->keys, parameters.prefix->values);
  } else if (tokens.shared.defined()) {
    attended = attention_of_whole_sequences(q, k, p.v, tokens, attention_config);
  } else {
    attended = attention(q, k, p.v, tokens.cu_seqlens, attention_config, Variable(), Variable(), tokens.attn_impl);
  }
  return attention_output(c, parameters, attended);
}

// In training, gate and up as one GEMM each way (autograd::joined_linear, the gradients into
// their joined sinks), when they were allocated together, are both trained and have no LoRA
// update: a checkpoint's first pass and its recompute take it alike. nullopt: project each.
std::optional<Variable> trained_gate_up(const LayerParameters& p, const Variable& h) {
  if (!(p.training || grad_enabled()) || p.held_weights != nullptr) return std::nullopt;
  const LayerWeights& w = *p.weights;
  for (int slot : {kGate, kUp})
    if (!w[slot].defined() || !w[slot].requires_grad() || (p.lora != nullptr && (*p.lora)[slot])) return std::nullopt;
  if (!Tensor::adjacent_rows({w[kGate].data(), w[kUp].data()})) return std::nullopt;
  return joined_linear(h, {w[kGate], w[kUp]});
}

// silu(gate) * up: with [gate; up] as one weight (GLM's fused one, or the joined allocation)
// one op whose kernel ends in the SwiGLU where it can (ops::linear_swiglu_forward), or in
// training one GEMM and the activation, else the projections and then the activation.
Variable gate_up_activation(const ModelConfig& c, const LayerParameters& p, const Variable& h) {
  const std::optional<JoinedWeight> joined =
      c.fused_gate_up ? joined_weight(p, {kGateUp}, {kGateUpBias}) : joined_weight(p, {kGate, kUp}, {});
  if (joined) return Variable(ops::linear_swiglu_forward(h.data(), joined->weight, joined->bias));
  if (c.fused_gate_up) return swiglu_fused(project(p, h, kGateUp, kGateUpBias));
  if (std::optional<Variable> gate_up = trained_gate_up(p, h)) return swiglu_fused(*gate_up);
  std::vector<Variable> gate_up = project_each(p, h, {{kGate, -1}, {kUp, -1}});
  return swiglu(gate_up[0], gate_up[1]);
}

// In training, the SwiGLU and the down projection as one op that keeps gate_up and not the
// activation (autograd::swiglu_linear, which writes it again in backward), when gate and up are
// one product and the down projection a plain dense one (no LoRA update) and no recorder asks
// for the activation. nullopt: activate, then project.
std::optional<Variable> trained_swiglu_down(const ModelConfig& c, const LayerParameters& p, const Variable& h) {
  if (!grad_enabled() || p.held_weights != nullptr || p.record.recorder != nullptr) return std::nullopt;
  const std::optional<Projection> down = fusable_projection(p, kDown, kDownBias);
  if (!down || down->lora_a.defined()) return std::nullopt;
  const std::optional<Variable> gate_up =
      c.fused_gate_up ? std::optional<Variable>(project(p, h, kGateUp, kGateUpBias)) : trained_gate_up(p, h);
  if (!gate_up) return std::nullopt;
  // Nothing below the MLP trains (GLM's frozen gate_up over an input without a gradient): the
  // product alone, half gate_up's size, is all the down projection's weight gradient keeps.
  if (!gate_up->requires_grad()) return project(p, swiglu_fused(*gate_up), kDown, kDownBias);
  return swiglu_linear(*gate_up, down->weight, down->bias);
}

Variable down_projection(const ModelConfig& c, const LayerParameters& p, const Variable& h) {
  if (std::optional<Variable> fused = trained_swiglu_down(c, p, h)) return *fused;
  const Variable activated = gate_up_activation(c, p, h);
  p.record("mlp.act", activated);
  return project(p, activated, kDown, kDownBias);
}

Variable mlp(const ModelConfig& c, const LayerParameters& p, const Variable& h) {
  const LayerWeights& w = *p.weights;
  Variable out = summed_over_ranks(p, down_projection(c, p, h));
  p.record("mlp", out);
  return c.sandwich_norms ? p.record("post_mlp_layernorm", norm(c, out, w[kPostMlpNorm])) : out;
}

}  // namespace

Variable ResidualStream::summed() const { return delta.defined() ? residual_add(delta, residual) : residual; }

NormedSum normed_stream(const ModelConfig& config, const ResidualStream& x, const Variable& weight) {
  if (x.delta.defined()) return add_then_norm(config, x.delta, x.residual, weight);
  return {x.residual, norm(config, x.residual, weight)};
}

ResidualStream decoder_layer(const ModelConfig& config, std::int64_t layer, const LayerParameters& parameters,
                             const ResidualStream& x, const TokenLayout& tokens, KvCache* cache) {
  const LayerWeights& weights = *parameters.weights;
  const LayerRecording& record = parameters.record;
  const NormedSum input = normed_stream(config, x, weights[kInputNorm]);
  Variable attended = self_attention(config, layer, parameters, record("input_layernorm", input.normed), tokens, cache);
  const NormedSum after_attention = add_then_norm(config, attended, input.sum, weights[kPostAttentionNorm]);
  ResidualStream out{after_attention.sum,
                     mlp(config, parameters, record("post_attention_layernorm", after_attention.normed))};
  if (record.recorder == nullptr) return out;
  return {record("", out.summed()), Variable()};
}

Variable decoder_layer(const ModelConfig& config, std::int64_t layer, const LayerParameters& parameters,
                       const Variable& x, const TokenLayout& tokens, KvCache* cache) {
  return decoder_layer(config, layer, parameters, ResidualStream{x, Variable()}, tokens, cache).summed();
}

}  // namespace zt::models
