// QLoRA in a training run: LoRA trains beside a base whose linear weights are held in
// bitsandbytes' 4 bits (models/quant/), each layer dequantized while it computes. The base is
// either a model folder saved in 4 bits (its config.json's quantization_config), kept packed, or
// a dense folder quantized at load by --quantization_bit 4 / --load_in_4bit
// (train/args/base_quantization.h).
#pragma once

#include <string>

#include "models/model.h"
#include "train/args/training_arguments.h"

namespace zt::train {

// Before loading: a 4-bit model folder is kept packed (options.keep_4bit_weights), a dense one
// asked to be quantized is quantized as it loads (options.quantize_base), so the dense linears
// never sit on the device. A 4-bit base recomputes its layers in backward unless the arguments
// turn gradient checkpointing off by name (PEFT's QLoRA recipe turns it on). Throws zt::Error for a method other than
// LoRA on a 4-bit folder, as its weights cannot be trained.
void plan_4bit_loading(models::ModelOptions& options, const models::ModelConfig& config, const TrainingArguments& args);

// After the LoRA is attached and the base frozen: quantizes the base's decoder linears when the
// arguments ask and the model was loaded dense (a caller that skipped plan_4bit_loading). Returns a line for the log
// (what is held in 4 bits, and its size), empty when the base is dense. Throws for ZeRO stage 3, which partitions the
// same weights.
std::string quantize_base(models::CausalLM& model, const TrainingArguments& args, int zero_stage);

}  // namespace zt::train
