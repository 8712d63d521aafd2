// Which modules a LoRA adapts, by PEFT's rules (check_target_module_exists): target_modules
// as a list of names (a module whose path is the name or ends with "." + name) or as a regular
// expression that must match the whole path (re.fullmatch), exclude_modules the same way, and
// layers_to_transform / layers_pattern keeping a list's matches to some layers. Paths are the
// model's module names as transformers' named_modules() gives them
// (model.layers.3.self_attn.q_proj, transformer.encoder.layers.3.self_attention.dense).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "models/config/config.h"
#include "models/peft/adapter_config.h"
#include "models/weights/hf_names.h"

namespace zt::models {

// Why `pattern` cannot be used as a module pattern (std::regex, ECMAScript syntax, which
// shares Python's re syntax for the usual forms: . * + ? | () (?:) [] \d \b {m,n} (?!) ^ $),
// or nothing when it compiles.
std::optional<std::string> module_pattern_error(const std::string& pattern);

// PEFT's rule for a list of module names: `path` is one of them, or ends with "." and one.
bool names_module(const std::vector<std::string>& names, const std::string& path);

// Whether PEFT adapts the module at `path` under `config` (before asking whether the module
// is one LoRA can adapt).
bool lora_targets_module(const LoraConfig& config, const std::string& path);

// The targeted linear modules of each decoder layer, by slot. A target that matches a module
// zerotune puts no LoRA on (the LM head, the embedding, a norm, a whole attention block) and a
// target that matches nothing are errors that name the target.
std::vector<std::array<bool, kLayerSlotCount>> lora_target_slots(const ModelConfig& model, const LoraConfig& config);

// "q_proj, v_proj", or "the pattern '.*\.(q|v)_proj'", with the layer and exclusion settings.
std::string describe_lora_targets(const LoraConfig& config);

}  // namespace zt::models
