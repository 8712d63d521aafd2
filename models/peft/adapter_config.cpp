#include "models/peft/adapter_config.h"

#include <cmath>
#include <optional>
#include <utility>

#include "models/config/config_json.h"
#include "runtime/enum_names.h"

namespace zt::models {
namespace {

// PEFT reads a string as a regular expression over full module paths, which zerotune's
// per-name matching cannot reproduce; a list of names it can.
std::vector<std::string> target_modules_of(const nlohmann::ordered_json& json, const detail::ConfigKeys& keys) {
  if (!keys.has("target_modules")) keys.fail("target_modules is missing; list the adapted modules, e.g. [\"q_proj\"]");
  const auto& value = json["target_modules"];
  if (value.is_string()) {
    if (value.get<std::string>() == "all-linear") return {"all-linear"};
    keys.fail("target_modules is the regular expression '" + value.get<std::string>() +
              "'; zerotune reads a list of module names only: save the adapter with target_modules as a list");
  }
  if (!value.is_array()) keys.fail("target_modules must be a list of module names");
  std::vector<std::string> names;
  for (const auto& name : value) {
    if (!name.is_string()) keys.fail("target_modules must be a list of module names, got " + value.dump());
    names.push_back(name.get<std::string>());
  }
  return names;
}

// init_lora_weights: the initialisations that leave the base weights alone (PEFT's default,
// "gaussian", "eva", "orthogonal") are fine, the trained A and B being what counts. PiSSA,
// CorDA, OLoRA and LoftQ subtract their initial update from the base weights (or quantize
// them) whenever PEFT builds the adapter, loading included, so the adapter only holds against
// that changed base.
void require_plain_init(const nlohmann::ordered_json& json, const detail::ConfigKeys& keys) {
  if (!keys.has("init_lora_weights") || json["init_lora_weights"].is_boolean()) return;
  const std::string init = keys.string("init_lora_weights", "");
  if (init == "gaussian" || init == "eva" || init == "orthogonal") return;
  const bool base_changing =
      init.starts_with("pissa") || init.starts_with("corda") || init == "olora" || init == "loftq";
  if (!base_changing)
    keys.fail("init_lora_weights is '" + init +
              "', an initialisation zerotune does not know; it reads adapters initialised as true, false, "
              "\"gaussian\", \"eva\" or \"orthogonal\"");
  keys.fail("init_lora_weights is '" + init +
            "': this initialisation changes the base model's weights as the adapter is built, so the adapter "
            "only holds against that changed base, which zerotune does not recompute; convert it to a plain "
            "LoRA of the original base first (PEFT's save_pretrained(..., "
            "path_initial_model_for_weight_conversion=...), LLaMA-Factory's pissa_convert) or merge it with PEFT");
}

// Keys whose non-default values change what the adapter computes in ways zerotune does not.
void require_plain_lora(const nlohmann::ordered_json& json, const detail::ConfigKeys& keys) {
  const std::string peft_type = keys.string("peft_type", "");
  if (peft_type != "LORA") keys.fail("peft_type is '" + peft_type + "'; zerotune loads LoRA adapters (\"LORA\") only");
  for (const char* pattern : {"rank_pattern", "alpha_pattern"})
    if (keys.has(pattern) && !json[pattern].empty())
      keys.fail(std::string(pattern) +
                " is set: per-module ranks and alphas are not supported; merge the adapter "
                "with PEFT (merge_and_unload) or train it with one rank and alpha");
  if (keys.boolean("use_dora", false)) keys.fail("use_dora is true: DoRA adapters are not supported");
  if (keys.boolean("use_qalora", false)) keys.fail("use_qalora is true: QA-LoRA adapters are not supported");
  require_plain_init(json, keys);
  if (keys.boolean("lora_bias", false)) keys.fail("lora_bias is true: LoRA biases are not supported");
  if (keys.string("bias", "none") != "none")
    keys.fail("bias is '" + keys.string("bias", "") + "': adapters that train biases are not supported (use \"none\")");
  for (const char* key : {"modules_to_save", "layers_to_transform", "layer_replication", "exclude_modules",
                          "target_parameters", "trainable_token_indices", "alora_invocation_tokens"})
    if (keys.has(key) && !json[key].empty())
      keys.fail(std::string(key) +
                " is set; zerotune applies LoRA to target_modules in every layer, without "
                "exclusions or extra trained modules");
}

}  // namespace

double LoraConfig::scale() const {
  return use_rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
}

PeftAdapterKind parse_peft_adapter_kind(const nlohmann::ordered_json& json, const std::string& source) {
  const detail::ConfigKeys keys(json, source);
  const std::string type = keys.string("peft_type", "");
  constexpr EnumName<PeftAdapterKind> kPeftTypes[] = {{PeftAdapterKind::kLora, "LORA"},
                                                      {PeftAdapterKind::kPrefix, "PREFIX_TUNING"}};
  if (std::optional<PeftAdapterKind> kind = find_value(kPeftTypes, type)) return *kind;
  if (type == "P_TUNING" || type == "PROMPT_TUNING" || type == "MULTITASK_PROMPT_TUNING")
    keys.fail("peft_type is '" + type +
              "': it learns virtual token embeddings put in front of the input, "
              "which zerotune does not apply; it applies \"LORA\" and \"PREFIX_TUNING\" (P-Tuning v2) adapters");
  keys.fail("peft_type is '" + type + "'; zerotune applies \"LORA\" and \"PREFIX_TUNING\" adapters only");
}

LoraConfig parse_lora_config(const nlohmann::ordered_json& json, const std::string& source) {
  const detail::ConfigKeys keys(json, source);
  require_plain_lora(json, keys);
  LoraConfig config;
  config.rank = keys.integer("r", 8);  // PEFT's defaults for absent keys
  keys.require_size("r", config.rank);
  config.alpha = keys.number("lora_alpha", 8.0);
  config.dropout = keys.number("lora_dropout", 0.0);
  config.use_rslora = keys.boolean("use_rslora", false);
  config.target_modules = target_modules_of(json, keys);
  config.base_model_name_or_path = keys.string("base_model_name_or_path", "");
  return config;
}

PeftPrefixConfig parse_peft_prefix_config(const nlohmann::ordered_json& json, const std::string& source) {
  const detail::ConfigKeys keys(json, source);
  const std::string peft_type = keys.string("peft_type", "");
  if (peft_type != "PREFIX_TUNING") keys.fail("peft_type is '" + peft_type + "', not \"PREFIX_TUNING\"");
  const std::string task = keys.string("task_type", "CAUSAL_LM");
  if (task != "CAUSAL_LM") keys.fail("task_type is '" + task + "'; zerotune runs causal language models (CAUSAL_LM)");
  if (keys.integer("num_transformer_submodules", 1) != 1)
    keys.fail("num_transformer_submodules is not 1: a prefix for an encoder-decoder model");
  PeftPrefixConfig config;
  for (auto [key, value] : {std::pair{"num_virtual_tokens", &config.num_virtual_tokens},
                            {"num_layers", &config.num_layers},
                            {"token_dim", &config.token_dim},
                            {"num_attention_heads", &config.num_attention_heads}}) {
    if (!keys.has(key)) keys.fail(std::string(key) + " is missing (PEFT fills it in when it saves the adapter)");
    *value = keys.integer(key, 0);
    keys.require_size(key, *value);
  }
  config.base_model_name_or_path = keys.string("base_model_name_or_path", "");
  return config;
}

}  // namespace zt::models
