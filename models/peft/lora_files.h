// LoRA adapters in PEFT's folder layout, as PeftModel.save_pretrained writes them and
// PeftModel.from_pretrained reads them: adapter_config.json (peft_type "LORA", r,
// lora_alpha, target_modules, ...) beside adapter_model.safetensors, whose tensors are
// named base_model.model.<module>.lora_A.weight / .lora_B.weight.
#pragma once

#include <string>

#include "models/peft/lora.h"

namespace zt::models {

inline constexpr const char* kAdapterConfigFile = "adapter_config.json";
inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";

// adapter_config.json of `dir`. Settings zerotune cannot apply (a regex target_modules,
// rank_pattern, DoRA, trained biases, ...) are errors that name the file and the key.
LoraConfig read_lora_config(const std::string& dir);

// Writes both files into `dir` (created if missing), each atomically. The matrices are
// stored in float32, the dtype PEFT keeps adapter weights in.
void save_lora_adapter(const CausalLM& model, const LoraConfig& config, const std::string& dir);

// Copies `dir`'s adapter_model.safetensors into the LoRA already attached to the model,
// converting dtypes. Every missing, unexpected or wrongly shaped tensor is reported in one
// error naming the file, before anything is copied.
void load_lora_weights(CausalLM& model, const std::string& dir);

// read_lora_config, attach_lora, load_lora_weights: the adapter of `dir` on the model.
LoraConfig load_lora_adapter(CausalLM& model, const std::string& dir);

}  // namespace zt::models
