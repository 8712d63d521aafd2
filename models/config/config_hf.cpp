// qwen2, qwen3, glm and glm4 configs, with the defaults of transformers' Qwen2Config,
// Qwen3Config, GlmConfig and Glm4Config for keys the file leaves out.
#include <algorithm>
#include <string>

#include "models/config/config_parsers.h"
#include "runtime/json_text.h"

namespace zt::models::detail {
namespace {

struct FamilyDefaults {
  std::int64_t vocab_size, hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads;
  std::int64_t head_dim;  // 0: hidden_size / num_attention_heads
  double norm_eps;
  double rotary_fraction;
  std::optional<std::int64_t> pad_token_id;
};

FamilyDefaults defaults_for(Architecture arch) {
  switch (arch) {
    case Architecture::kQwen2:
      return {151936, 4096, 22016, 32, 32, 32, 0, 1e-6, 1.0, std::nullopt};
    case Architecture::kQwen3:
      return {151936, 4096, 22016, 32, 32, 32, 128, 1e-6, 1.0, std::nullopt};
    default:
      return {151552, 4096, 13696, 40, 32, 2, 128, 1.5625e-7, 0.5, 151329};
  }
}

// A scaled RoPE (yarn, linear, dynamic, ...) changes every rotation, so it is refused. Model
// cards (Qwen2.5, Qwen3, GLM-4-0414) tell users to add the block only to go past the positions
// the model was trained with; the message says how to read the model as released instead.
[[noreturn]] void refuse_rope_scaling(const ConfigKeys& keys, const ConfigKeys& inner, const std::string& where,
                                      const std::string& type) {
  std::string details;
  for (const char* key : {"factor", "original_max_position_embeddings"})
    if (inner.has(key) && inner.number(key, 0.0) > 0.0)
      details += std::string(details.empty() ? " (" : ", ") + key + " " + number_text(inner.number(key, 0.0));
  if (!details.empty()) details += ")";
  std::int64_t trained = inner.integer("original_max_position_embeddings", 0);
  if (trained <= 0) trained = keys.integer("max_position_embeddings", 0);
  const std::string remedy =
      where == "rope_scaling"
          ? "remove rope_scaling from config.json"
          : "set rope_parameters' rope_type to \"default\" in config.json and remove its other keys but rope_theta";
  keys.fail(where + " asks for RoPE type '" + type + "'" + details +
            ", which zerotune does not implement; supported: default (plain RoPE). If it was added to stretch the "
            "context past what the model was trained with, as Qwen's and GLM's model cards suggest: " +
            remedy + " to run it with plain RoPE, as the model was released" +
            (trained > 0 ? " (up to " + std::to_string(trained) + " positions)" : std::string()) +
            (type == "dynamic" ? std::string()
                               : "; its outputs then differ from those of a run with the scaling at every length"));
}

// rope_theta sits at the top level (transformers 4.x), inside rope_parameters (5.x) or, in
// some 4.x files, inside rope_scaling; only plain RoPE is implemented.
void read_rope(const ConfigKeys& keys, const FamilyDefaults& defaults, bool partial_allowed, ModelConfig& c) {
  const nlohmann::ordered_json* nested[] = {keys.object("rope_parameters"), keys.object("rope_scaling")};
  const char* nested_names[] = {"rope_parameters", "rope_scaling"};
  c.rope.base = 10000.0;
  c.rope.rotary_fraction = defaults.rotary_fraction;
  bool theta_found = keys.has("rope_theta");
  if (theta_found) c.rope.base = keys.number("rope_theta", 10000.0);
  if (partial_allowed) c.rope.rotary_fraction = keys.number("partial_rotary_factor", c.rope.rotary_fraction);
  for (int i = 0; i < 2; ++i) {
    if (nested[i] == nullptr) continue;
    ConfigKeys inner(*nested[i], keys.source() + " (" + nested_names[i] + ")");
    std::string type = inner.has("rope_type") ? inner.string("rope_type", "") : inner.string("type", "default");
    if (type != "default") refuse_rope_scaling(keys, inner, nested_names[i], type);
    if (!theta_found && inner.has("rope_theta")) {
      c.rope.base = inner.number("rope_theta", 10000.0);
      theta_found = true;
    }
    if (partial_allowed && !keys.has("partial_rotary_factor"))
      c.rope.rotary_fraction = inner.number("partial_rotary_factor", c.rope.rotary_fraction);
  }
}

// Qwen's sliding window applies only where use_sliding_window is on, to the layers that
// layer_types marks "sliding_attention" or, without layer_types, from max_window_layers on.
void read_sliding_window(const ConfigKeys& keys, ModelConfig& c) {
  if (!keys.boolean("use_sliding_window", false) || !keys.has("sliding_window")) return;
  c.sliding_window = keys.integer("sliding_window", 4096);
  keys.require_positive("sliding_window", c.sliding_window);
  if (keys.has("layer_types")) {
    const auto& types = c.raw.at("layer_types");
    if (!types.is_array() || static_cast<std::int64_t>(types.size()) != c.num_layers)
      keys.fail("key 'layer_types' must list one type per layer (" + std::to_string(c.num_layers) + ")");
    for (std::size_t i = 0; i < types.size(); ++i) c.sliding_layers[i] = types[i] == "sliding_attention";
    return;
  }
  // transformers marks layer i sliding when i >= max_window_layers, so a negative value means all.
  const std::int64_t first = std::max<std::int64_t>(keys.integer("max_window_layers", 28), 0);
  for (std::int64_t i = first; i < c.num_layers; ++i) c.sliding_layers[static_cast<std::size_t>(i)] = true;
}

}  // namespace

void parse_hf_config(const ConfigKeys& keys, ModelConfig& c) {
  FamilyDefaults d = defaults_for(c.arch);
  c.vocab_size = keys.integer("vocab_size", d.vocab_size);
  c.hidden_size = keys.integer("hidden_size", d.hidden_size);
  c.intermediate_size = keys.integer("intermediate_size", d.intermediate_size);
  c.num_layers = keys.integer("num_hidden_layers", d.num_layers);
  c.num_heads = keys.integer("num_attention_heads", d.num_heads);
  for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"})
    keys.require_size(key, keys.integer(key, 1));
  c.num_kv_heads = keys.has("num_key_value_heads")       ? keys.integer("num_key_value_heads", 0)
                   : keys.is_null("num_key_value_heads") ? c.num_heads
                                                         : d.num_kv_heads;
  keys.require_size("num_key_value_heads", c.num_kv_heads);
  if (keys.has("head_dim") || d.head_dim > 0) {
    c.head_dim = keys.integer("head_dim", d.head_dim);
    keys.require_size("head_dim", c.head_dim);
  } else {
    if (c.hidden_size % c.num_heads != 0)
      keys.fail("hidden_size " + std::to_string(c.hidden_size) + " is not a multiple of num_attention_heads " +
                std::to_string(c.num_heads) + " and no head_dim is given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  c.norm_eps = keys.number("rms_norm_eps", d.norm_eps);
  c.norm_style = ops::RmsNormStyle::kQwen;  // Qwen2RMSNorm, Qwen3RMSNorm, GlmRMSNorm, Glm4RMSNorm alike
  std::string act = keys.string("hidden_act", "silu");
  if (act != "silu") keys.fail("hidden_act '" + act + "' is not supported; these models use 'silu' (SwiGLU)");

  bool is_glm = c.arch == Architecture::kGlm || c.arch == Architecture::kGlm4;
  read_rope(keys, d, is_glm, c);
  c.rope.style = is_glm ? ops::RopeStyle::kInterleaved : ops::RopeStyle::kRotateHalf;
  switch (c.arch) {
    case Architecture::kQwen2:
      c.qkv_bias = true;  // Qwen2Attention: q/k/v always with bias, o_proj without
      break;
    case Architecture::kQwen3:
      c.qkv_bias = c.o_bias = keys.boolean("attention_bias", false);
      c.qk_norm = true;
      break;
    default:
      c.qkv_bias = keys.boolean("attention_bias", true);
      c.fused_gate_up = true;
      c.sandwich_norms = c.arch == Architecture::kGlm4;
      break;
  }
  c.tie_word_embeddings = keys.boolean("tie_word_embeddings", false);
  c.initializer_range = keys.number("initializer_range", 0.02);
  c.pad_token_id = keys.is_null("pad_token_id") ? std::nullopt
                   : keys.has("pad_token_id")   ? keys.optional_integer("pad_token_id")
                                                : d.pad_token_id;
  c.sliding_layers.assign(static_cast<std::size_t>(c.num_layers), false);
  if (!is_glm) read_sliding_window(keys, c);
}

}  // namespace zt::models::detail
