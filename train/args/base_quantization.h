// QLoRA's arguments resolved: the frozen base linears quantized to bitsandbytes' 4 bits at load
// (models/quant/), asked for by LLaMA-Factory's quantization_bit 4 (defaults: nf4, double
// quantization) or transformers' load_in_4bit (defaults: fp4, none), the type and double
// quantization given explicitly overriding either. Pure: the arguments' fuzz target builds it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "train/args/training_arguments.h"

namespace zt::train {

struct BaseQuantization {
  std::string quant_type = "nf4";  // nf4 | fp4
  bool double_quant = true;
};

// The dtype the layers compute in, as torch names it: bfloat16 with --bf16, float16 with
// --fp16, else float32 (the compute dtype a 4-bit base must match; what zerotune estimate counts).
std::string training_dtype(const TrainingArguments& args);

// nullopt: the base keeps the training dtype.
std::optional<BaseQuantization> base_quantization(const TrainingArguments& args);

// Whether the arguments ask for a 4-bit base (--quantization_bit 4, or --load_in_4bit without a
// width), whatever else they say.
bool asks_for_4bit(const TrainingArguments& args);

// Appends a line per problem: a width other than 4, 8-bit bitsandbytes, a method other than
// LoRA on a 4-bit base (LLaMA-Factory and PEFT refuse to train quantized weights), a compute
// dtype other than the training dtype, the settings given without a 4-bit base.
void check_base_quantization(const TrainingArguments& args, std::vector<std::string>& errors);

}  // namespace zt::train
