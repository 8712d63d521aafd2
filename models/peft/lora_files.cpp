#include "models/peft/lora_files.h"

#include <cmath>
#include <filesystem>

#include "autograd/grad_mode.h"
#include "models/config/config_json.h"
#include "models/peft/adapter_paths.h"
#include "models/weights/tensor_mismatches.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

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

nlohmann::ordered_json config_json(const LoraConfig& config) {
  nlohmann::ordered_json alpha = config.alpha;
  if (config.alpha == std::floor(config.alpha)) alpha = static_cast<std::int64_t>(config.alpha);
  // Sorted keys, as PEFT writes them.
  return nlohmann::ordered_json{{"alpha_pattern", nlohmann::ordered_json::object()},
                                {"auto_mapping", nullptr},
                                {"base_model_name_or_path", config.base_model_name_or_path},
                                {"bias", "none"},
                                {"fan_in_fan_out", false},
                                {"inference_mode", true},
                                {"init_lora_weights", true},
                                {"layers_pattern", nullptr},
                                {"layers_to_transform", nullptr},
                                {"lora_alpha", alpha},
                                {"lora_dropout", config.dropout},
                                {"modules_to_save", nullptr},
                                {"peft_type", "LORA"},
                                {"r", config.rank},
                                {"rank_pattern", nlohmann::ordered_json::object()},
                                {"revision", nullptr},
                                {"target_modules", config.target_modules},
                                {"task_type", "CAUSAL_LM"},
                                {"use_dora", false},
                                {"use_rslora", config.use_rslora}};
}

}  // namespace

LoraConfig read_lora_config(const std::string& dir) {
  const FolderJson file(dir, kAdapterConfigFile,
                        ": expected a LoRA adapter folder as PEFT or zerotune train writes it");
  const detail::ConfigKeys& keys = file.keys;
  require_plain_lora(file.json, keys);
  LoraConfig config;
  config.rank = keys.integer("r", 8);  // PEFT's defaults for absent keys
  keys.require_positive("r", config.rank);
  config.alpha = keys.number("lora_alpha", 8.0);
  config.dropout = keys.number("lora_dropout", 0.0);
  config.use_rslora = keys.boolean("use_rslora", false);
  config.target_modules = target_modules_of(file.json, keys);
  config.base_model_name_or_path = keys.string("base_model_name_or_path", "");
  return config;
}

void save_lora_adapter(const CausalLM& model, const LoraConfig& config, const std::string& dir) {
  fs::create_directories(dir);
  NamedTensors tensors;
  for (const NamedParameter& p : lora_parameters(model))
    tensors.emplace_back(p.name, p.variable.data().to(Device::cpu(), DType::kF32));
  ZT_REQUIRE(!tensors.empty(), "saving a LoRA adapter to '" + dir + "': the model has no LoRA attached");
  save_safetensors(path_in(dir, kAdapterWeightsFile), tensors, {{"format", "pt"}});
  write_file_atomically(path_in(dir, kAdapterConfigFile), config_json(config).dump(2) + "\n");
}

void load_lora_weights(CausalLM& model, const std::string& dir) {
  const std::string path = existing_file_in(dir, kAdapterWeightsFile,
                                            " (zerotune reads safetensors adapters only; PEFT writes them by default)");
  const SafetensorsFile file = SafetensorsFile::open(path);
  const std::vector<NamedParameter> expected = lora_parameters(model);
  std::vector<std::string> problems = tensor_mismatches(expected, file);
  if (!problems.empty()) {
    std::string message = "the LoRA adapter '" + path + "' does not match the model and " + kAdapterConfigFile + ": " +
                          std::to_string(problems.size()) + " problem(s)";
    for (const std::string& line : problems) message += "\n  " + line;
    fail(message + "\ncheck that the adapter was trained on this base model (" + model.config().source + ")");
  }
  autograd::NoGradGuard no_recording;
  for (const NamedParameter& p : expected) {
    Tensor target = p.variable.data();
    target.copy_from(file.get(p.name));
  }
}

LoraConfig load_lora_adapter(CausalLM& model, const std::string& dir) {
  LoraConfig config = read_lora_config(dir);
  if (config.target_modules == std::vector<std::string>{"all-linear"})
    config.target_modules = lora_module_names(model.config());
  attach_lora(model, config, 0);
  load_lora_weights(model, dir);
  return config;
}

}  // namespace zt::models
