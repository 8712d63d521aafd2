#include "models/peft/lora_files.h"

#include <cmath>
#include <filesystem>

#include "autograd/grad_mode.h"
#include "models/peft/adapter_paths.h"
#include "models/weights/tensor_mismatches.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

nlohmann::ordered_json config_json(const LoraConfig& config) {
  nlohmann::ordered_json alpha = config.alpha;
  nlohmann::ordered_json targets = config.target_modules;
  if (!config.target_pattern.empty()) targets = config.target_pattern;
  nlohmann::ordered_json layers = nullptr, layers_pattern = nullptr, exclude = nullptr;
  if (!config.layers_to_transform.empty()) layers = config.layers_to_transform;
  if (!config.layers_pattern.empty()) layers_pattern = config.layers_pattern;
  if (!config.exclude_modules.empty()) exclude = config.exclude_modules;
  if (!config.exclude_pattern.empty()) exclude = config.exclude_pattern;
  if (config.alpha == std::floor(config.alpha)) alpha = static_cast<std::int64_t>(config.alpha);
  // Sorted keys, as PEFT writes them. exclude_modules (PEFT 0.14) only when set: PEFT 0.10 to
  // 0.13 build LoraConfig(**file) and fail on a key they lack, and they have all the others.
  nlohmann::ordered_json json{{"alpha_pattern", nlohmann::ordered_json::object()},
                              {"auto_mapping", nullptr},
                              {"base_model_name_or_path", config.base_model_name_or_path},
                              {"bias", "none"},
                              {"exclude_modules", exclude},
                              {"fan_in_fan_out", false},
                              {"inference_mode", true},
                              {"init_lora_weights", true},
                              {"layers_pattern", layers_pattern},
                              {"layers_to_transform", layers},
                              {"lora_alpha", alpha},
                              {"lora_dropout", config.dropout},
                              {"modules_to_save", nullptr},
                              {"peft_type", "LORA"},
                              {"r", config.rank},
                              {"rank_pattern", nlohmann::ordered_json::object()},
                              {"revision", nullptr},
                              {"target_modules", targets},
                              {"task_type", "CAUSAL_LM"},
                              {"use_dora", false},
                              {"use_rslora", config.use_rslora}};
  if (exclude.is_null()) json.erase("exclude_modules");
  return json;
}

}  // namespace

LoraConfig read_lora_config(const std::string& dir) {
  const FolderJson file(dir, kAdapterConfigFile,
                        ": expected a LoRA adapter folder as PEFT or zerotune train writes it");
  return parse_lora_config(file.json, file.path);
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
  try {
    attach_lora(model, config, 0);
  } catch (const Error& e) {
    fail(path_in(dir, kAdapterConfigFile) + ": " + e.what());
  }
  load_lora_weights(model, dir);
  return config;
}

}  // namespace zt::models
