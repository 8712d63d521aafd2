#include "models/peft/adapter_config.h"

#include <cmath>
#include <optional>
#include <utility>

#include "models/config/config_json.h"
#include "models/peft/lora_targets.h"
#include "runtime/ascii_lower.h"
#include "runtime/enum_names.h"

namespace zt::models {
namespace {

// A string of `key` that PEFT reads as a regular expression (re.fullmatch over module paths),
// refused here when C++'s std::regex (ECMAScript) cannot compile it.
std::string module_pattern_of(const std::string& key, const std::string& pattern, const detail::ConfigKeys& keys) {
  if (const std::optional<std::string> error = module_pattern_error(pattern))
    keys.fail(key + " is the regular expression '" + pattern + "', which zerotune cannot compile (" + *error +
              "): it reads ECMAScript syntax, which has Python's usual forms (. * + ? | ( ) (?: ) [ ] \\d \\b "
              "{m,n} (?! ) ^ $) but not (?P<name> ), look-behind (?<= ) or inline flags such as (?i); "
              "rewrite the pattern or save the adapter with a list of module names");
  return pattern;
}

std::vector<std::string> names_of(const std::string& key, const nlohmann::ordered_json& value,
                                  const detail::ConfigKeys& keys) {
  if (!value.is_array())
    keys.fail(key + " must be a list of module names or a regular expression, got " + value.dump());
  std::vector<std::string> names;
  for (const auto& name : value) {
    if (!name.is_string()) keys.fail(key + " must be a list of module names, got " + value.dump());
    names.push_back(name.get<std::string>());
  }
  return names;
}

// target_modules as PEFT reads it: a list of names, "all-linear" (any case), or any other
// string as a regular expression that must match a module's whole path.
void read_targets(const nlohmann::ordered_json& json, const detail::ConfigKeys& keys, LoraConfig& config) {
  if (!keys.has("target_modules")) keys.fail("target_modules is missing; list the adapted modules, e.g. [\"q_proj\"]");
  const auto& value = json["target_modules"];
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (ascii_lower(text) == "all-linear") {
      config.target_modules = {"all-linear"};
    } else {
      if (text.empty()) keys.fail("target_modules is an empty string; list the adapted modules, e.g. [\"q_proj\"]");
      config.target_pattern = module_pattern_of("target_modules", text, keys);
    }
  } else {
    config.target_modules = names_of("target_modules", value, keys);
  }
}

// layers_to_transform (an index or a list of them) and layers_pattern (a name or a list), which
// PEFT applies to a list of target names only and refuses beside a string target_modules.
void read_layers(const nlohmann::ordered_json& json, const detail::ConfigKeys& keys, LoraConfig& config) {
  const bool string_targets = json["target_modules"].is_string();
  if (keys.has("layers_to_transform") && !json["layers_to_transform"].empty()) {
    if (string_targets)
      keys.fail("layers_to_transform is set beside target_modules '" + json["target_modules"].get<std::string>() +
                "', a string; PEFT refuses the pair (layers_to_transform applies to a list of module names)");
    const auto& value = json["layers_to_transform"];
    const nlohmann::ordered_json list = value.is_array() ? value : nlohmann::ordered_json::array({value});
    for (const auto& layer : list) {
      if (!layer.is_number_integer())
        keys.fail("layers_to_transform must be a layer index or a list of them, got " + value.dump());
      config.layers_to_transform.push_back(layer.get<std::int64_t>());
    }
  }
  if (keys.has("layers_pattern") && !json["layers_pattern"].empty()) {
    const auto& value = json["layers_pattern"];
    if (string_targets && !(value.is_string() && value.get<std::string>().empty()))
      keys.fail("layers_pattern is set beside target_modules '" + json["target_modules"].get<std::string>() +
                "', a string; PEFT refuses the pair");
    if (value.is_string()) {
      if (!value.get<std::string>().empty()) config.layers_pattern.push_back(value.get<std::string>());
    } else {
      config.layers_pattern = names_of("layers_pattern", value, keys);
    }
    for (const std::string& pattern : config.layers_pattern) module_pattern_of("layers_pattern", pattern, keys);
    // Without layers_to_transform PEFT never reads it: no effect, as in PEFT.
    if (config.layers_to_transform.empty()) config.layers_pattern.clear();
  }
}

// exclude_modules: a list of names or a whole-path regular expression (PEFT 0.14 and later).
void read_exclusions(const nlohmann::ordered_json& json, const detail::ConfigKeys& keys, LoraConfig& config) {
  if (!keys.has("exclude_modules") || json["exclude_modules"].empty()) return;
  const auto& value = json["exclude_modules"];
  if (value.is_string()) {
    if (!value.get<std::string>().empty())
      config.exclude_pattern = module_pattern_of("exclude_modules", value.get<std::string>(), keys);
  } else {
    config.exclude_modules = names_of("exclude_modules", value, keys);
  }
}

// init_lora_weights: the initialisations that leave the base weights alone (PEFT's default,
// "gaussian", "eva", "orthogonal") are fine, the trained A and B being what counts. PiSSA,
// CorDA, OLoRA and LoftQ subtract their initial update from the base weights (or quantize
// them) whenever PEFT builds the adapter, loading included, and LoRA-GA (PEFT 0.19) when it
// starts training, so the adapter only holds against that changed base.
void require_plain_init(const nlohmann::ordered_json& json, const detail::ConfigKeys& keys) {
  if (!keys.has("init_lora_weights") || json["init_lora_weights"].is_boolean()) return;
  const std::string init = keys.string("init_lora_weights", "");
  if (init == "gaussian" || init == "eva" || init == "orthogonal") return;
  const bool base_changing =
      init.starts_with("pissa") || init.starts_with("corda") || init == "olora" || init == "loftq" || init == "lora_ga";
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
  // PEFT 0.18 and later switch these variants on by any value but null.
  for (const auto& [key, variant] : {std::pair{"arrow_config", "Arrow (routing between adapters)"},
                                     {"use_bdlora", "BD-LoRA (block-diagonal A or B)"},
                                     {"monteclora_config", "MonteCLoRA (sampled A)"},
                                     {"kasa_config", "KaSA (singular values between A and B)"}})
    if (keys.has(key)) keys.fail(std::string(key) + " is set: " + variant + " adapters are not supported");
  require_plain_init(json, keys);
  if (keys.boolean("lora_bias", false)) keys.fail("lora_bias is true: LoRA biases are not supported");
  if (keys.string("bias", "none") != "none")
    keys.fail("bias is '" + keys.string("bias", "") + "': adapters that train biases are not supported (use \"none\")");
  for (const char* key : {"modules_to_save", "layer_replication", "target_parameters", "trainable_token_indices",
                          "alora_invocation_tokens"})
    if (keys.has(key) && !json[key].empty())
      keys.fail(std::string(key) +
                " is set; zerotune applies LoRA to the target_modules of the decoder layers, without "
                "replicated layers, extra trained modules or tokens");
}

// PEFT's task type: CAUSAL_LM, or FEATURE_EXTRACTION (the same decoder without its LM head,
// whose linears the adapter changes the same way). The others were trained with a head
// zerotune does not have (a classifier, a span head) or for an encoder-decoder model.
void require_causal_task(const detail::ConfigKeys& keys) {
  const std::string task = keys.string("task_type", "CAUSAL_LM");
  if (task == "CAUSAL_LM" || task == "FEATURE_EXTRACTION") return;
  keys.fail("task_type is '" + task +
            "': the adapter was trained for another head or kind of model; zerotune runs causal language models "
            "(CAUSAL_LM)");
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
  require_causal_task(keys);
  LoraConfig config;
  config.rank = keys.integer("r", 8);  // PEFT's defaults for absent keys
  keys.require_size("r", config.rank);
  config.alpha = keys.number("lora_alpha", 8.0);
  config.dropout = keys.number("lora_dropout", 0.0);
  config.use_rslora = keys.boolean("use_rslora", false);
  read_targets(json, keys, config);
  read_layers(json, keys, config);
  read_exclusions(json, keys, config);
  config.base_model_name_or_path = keys.string("base_model_name_or_path", "");
  return config;
}

PeftPrefixConfig parse_peft_prefix_config(const nlohmann::ordered_json& json, const std::string& source) {
  const detail::ConfigKeys keys(json, source);
  const std::string peft_type = keys.string("peft_type", "");
  if (peft_type != "PREFIX_TUNING") keys.fail("peft_type is '" + peft_type + "', not \"PREFIX_TUNING\"");
  require_causal_task(keys);
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
