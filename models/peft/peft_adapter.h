// A PEFT adapter folder of either kind zerotune applies, told apart by adapter_config.json's
// peft_type as PeftModel.from_pretrained does: "LORA" (models/peft/lora_files.h) or
// "PREFIX_TUNING" (models/peft/peft_prefix_files.h).
#pragma once

#include <string>

#include "models/model.h"
#include "models/peft/adapter_config.h"

namespace zt::models {

// True when `dir` holds an adapter_config.json (a PEFT adapter rather than a model or a
// ChatGLM-style P-Tuning checkpoint).
bool is_peft_adapter_folder(const std::string& dir);

// The kind of `dir`'s adapter; an error naming the file for a peft_type zerotune cannot apply.
PeftAdapterKind peft_adapter_kind(const std::string& dir);

// Applies `dir`'s adapter to the model (LoRA beside the projections, or the prefix).
PeftAdapterKind load_peft_adapter(CausalLM& model, const std::string& dir);

}  // namespace zt::models
