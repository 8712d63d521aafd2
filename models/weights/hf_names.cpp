#include "models/weights/hf_names.h"

namespace zt::models {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Sizes {
  std::int64_t hidden, q, kv, ffn, head_dim;
};

Sizes sizes_of(const ModelConfig& c) {
  return {c.hidden_size, c.q_size(), c.kv_size(), c.intermediate_size, c.head_dim};
}

// transformers' layout: model.layers.N.{self_attn, mlp, *_layernorm}.
LayerSpecs hf_layer(const ModelConfig& c, std::int64_t index) {
  const std::string p = "model.layers." + std::to_string(index) + ".";
  const Sizes s = sizes_of(c);
  LayerSpecs l;
  l[kInputNorm] = ParamSpec{p + "input_layernorm.weight", {s.hidden}, ParamKind::kNorm};
  l[kQ] = ParamSpec{p + "self_attn.q_proj.weight", {s.q, s.hidden}};
  l[kK] = ParamSpec{p + "self_attn.k_proj.weight", {s.kv, s.hidden}};
  l[kV] = ParamSpec{p + "self_attn.v_proj.weight", {s.kv, s.hidden}};
  if (c.qkv_bias) {
    l[kQBias] = ParamSpec{p + "self_attn.q_proj.bias", {s.q}, ParamKind::kBias};
    l[kKBias] = ParamSpec{p + "self_attn.k_proj.bias", {s.kv}, ParamKind::kBias};
    l[kVBias] = ParamSpec{p + "self_attn.v_proj.bias", {s.kv}, ParamKind::kBias};
  }
  l[kO] = ParamSpec{p + "self_attn.o_proj.weight", {s.hidden, s.q}};
  if (c.o_bias) l[kOBias] = ParamSpec{p + "self_attn.o_proj.bias", {s.hidden}, ParamKind::kBias};
  if (c.qk_norm) {
    l[kQNorm] = ParamSpec{p + "self_attn.q_norm.weight", {s.head_dim}, ParamKind::kNorm};
    l[kKNorm] = ParamSpec{p + "self_attn.k_norm.weight", {s.head_dim}, ParamKind::kNorm};
  }
  if (c.sandwich_norms) {
    l[kPostSelfAttnNorm] = ParamSpec{p + "post_self_attn_layernorm.weight", {s.hidden}, ParamKind::kNorm};
    l[kPostMlpNorm] = ParamSpec{p + "post_mlp_layernorm.weight", {s.hidden}, ParamKind::kNorm};
  }
  l[kPostAttentionNorm] = ParamSpec{p + "post_attention_layernorm.weight", {s.hidden}, ParamKind::kNorm};
  if (c.fused_gate_up) {
    l[kGateUp] = ParamSpec{p + "mlp.gate_up_proj.weight", {2 * s.ffn, s.hidden}};
  } else {
    l[kGate] = ParamSpec{p + "mlp.gate_proj.weight", {s.ffn, s.hidden}};
    l[kUp] = ParamSpec{p + "mlp.up_proj.weight", {s.ffn, s.hidden}};
  }
  l[kDown] = ParamSpec{p + "mlp.down_proj.weight", {s.hidden, s.ffn}};
  return l;
}

// THUDM's layout: transformer.encoder.layers.N.{self_attention, mlp, *_layernorm}.
LayerSpecs chatglm_layer(const ModelConfig& c, std::int64_t index) {
  const std::string p = "transformer.encoder.layers." + std::to_string(index) + ".";
  const Sizes s = sizes_of(c);
  const std::int64_t qkv = s.q + 2 * s.kv;
  LayerSpecs l;
  l[kInputNorm] = ParamSpec{p + "input_layernorm.weight", {s.hidden}, ParamKind::kNorm};
  l[kQkv] = ParamSpec{p + "self_attention.query_key_value.weight", {qkv, s.hidden}};
  if (c.qkv_bias) l[kQkvBias] = ParamSpec{p + "self_attention.query_key_value.bias", {qkv}, ParamKind::kBias};
  l[kO] = ParamSpec{p + "self_attention.dense.weight", {s.hidden, s.q}};
  if (c.o_bias) l[kOBias] = ParamSpec{p + "self_attention.dense.bias", {s.hidden}, ParamKind::kBias};
  l[kPostAttentionNorm] = ParamSpec{p + "post_attention_layernorm.weight", {s.hidden}, ParamKind::kNorm};
  l[kGateUp] = ParamSpec{p + "mlp.dense_h_to_4h.weight", {2 * s.ffn, s.hidden}};
  if (c.mlp_bias) l[kGateUpBias] = ParamSpec{p + "mlp.dense_h_to_4h.bias", {2 * s.ffn}, ParamKind::kBias};
  l[kDown] = ParamSpec{p + "mlp.dense_4h_to_h.weight", {s.hidden, s.ffn}};
  if (c.mlp_bias) l[kDownBias] = ParamSpec{p + "mlp.dense_4h_to_h.bias", {s.hidden}, ParamKind::kBias};
  return l;
}

}  // namespace

std::vector<ParamSpec> ParameterLayout::all() const {
  std::vector<ParamSpec> specs{embedding};
  for (const LayerSpecs& layer : layers)
    for (const auto& spec : layer)
      if (spec) specs.push_back(*spec);
  if (final_norm) specs.push_back(*final_norm);
  if (lm_head) specs.push_back(*lm_head);
  return specs;
}

ParameterLayout parameter_layout(const ModelConfig& c) {
  const bool thudm = c.arch == Architecture::kChatGlm;
  const Shape table{c.vocab_size, c.hidden_size};
  ParameterLayout layout;
  layout.embedding = {thudm ? "transformer.embedding.word_embeddings.weight" : "model.embed_tokens.weight", table,
                      ParamKind::kEmbedding};
  for (std::int64_t i = 0; i < c.num_layers; ++i) layout.layers.push_back(thudm ? chatglm_layer(c, i) : hf_layer(c, i));
  if (c.final_norm)
    layout.final_norm = ParamSpec{
        thudm ? "transformer.encoder.final_layernorm.weight" : "model.norm.weight", {c.hidden_size}, ParamKind::kNorm};
  if (!c.tie_word_embeddings)
    layout.lm_head = ParamSpec{thudm ? "transformer.output_layer.weight" : "lm_head.weight", table};
  return layout;
}

bool is_carried_buffer(const std::string& name) {
  return ends_with(name, "rotary_emb.inv_freq") || ends_with(name, "rotary_pos_emb.inv_freq");
}

bool is_tied_head_copy(const ModelConfig& config, const std::string& name) {
  return config.tie_word_embeddings && config.arch != Architecture::kChatGlm && name == "lm_head.weight";
}

}  // namespace zt::models
