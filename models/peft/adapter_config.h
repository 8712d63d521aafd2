// adapter_config.json, which PEFT's save_pretrained writes beside an adapter's weights: the
// kind of adapter (peft_type) and the settings of a LoRA or a prefix-tuning adapter. Pure
// functions on the parsed file, so its checks need no model: every setting zerotune cannot
// apply is an error naming the file and the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::models {

enum class PeftAdapterKind { kLora, kPrefix };

struct LoraConfig {
  std::int64_t rank = 8;
  double alpha = 16.0;
  double dropout = 0.0;
  bool use_rslora = false;  // scale by alpha / sqrt(rank) (PEFT's rank-stabilised LoRA)
  // Module names (q_proj, query_key_value, self_attn.o_proj, ...), matched as PEFT matches
  // a list: a module whose path is the name or ends with "." + name. Empty when
  // target_pattern is set.
  std::vector<std::string> target_modules;
  std::string base_model_name_or_path;  // recorded in adapter_config.json
  // PEFT's target_modules as a string other than "all-linear": a regular expression that must
  // match a module's whole path (re.fullmatch), e.g. ".*\\.(q_proj|v_proj)".
  std::string target_pattern;
  // layers_to_transform: with a list of names, only the modules of these layers, whose index
  // PEFT reads after one of layers_pattern ("layers", ...; any name when empty).
  std::vector<std::int64_t> layers_to_transform;
  std::vector<std::string> layers_pattern;
  // exclude_modules: names (matched as target_modules' names) or a pattern (a whole-path
  // regular expression) of modules never adapted.
  std::vector<std::string> exclude_modules;
  std::string exclude_pattern;

  double scale() const;
};

struct PeftPrefixConfig {
  std::int64_t num_virtual_tokens = 0;
  std::int64_t num_layers = 0;
  std::int64_t token_dim = 0;            // kv_heads · head_dim
  std::int64_t num_attention_heads = 0;  // the kv heads
  std::string base_model_name_or_path;   // for error messages
};

// The kind of adapter `json` (read from `source`) describes, as PeftModel.from_pretrained
// tells it by peft_type; an error for a peft_type zerotune cannot apply.
PeftAdapterKind parse_peft_adapter_kind(const nlohmann::ordered_json& json, const std::string& source);

// A LoRA adapter's settings (PEFT's defaults for absent keys). target_modules as a list,
// "all-linear" or a regular expression, layers_to_transform and exclude_modules are read;
// an invalid pattern, rank_pattern, DoRA, trained biases and the like are errors.
LoraConfig parse_lora_config(const nlohmann::ordered_json& json, const std::string& source);

// A prefix-tuning adapter's settings; an error when it is not one for a decoder-only model.
PeftPrefixConfig parse_peft_prefix_config(const nlohmann::ordered_json& json, const std::string& source);

}  // namespace zt::models
