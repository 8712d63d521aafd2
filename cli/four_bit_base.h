// A 4-bit base under generate, chat and serve: the decoder's linear weights held in
// bitsandbytes' 4 bits (models/quant/), each layer dequantized only while it computes, the same
// mechanism QLoRA trains on. The base is a "-bnb-4bit" folder (its config.json's
// quantization_config), kept packed, or a dense folder quantized as it loads under
// --quantization_bit 4 (LLaMA-Factory's inference argument, with its --quantization_type and
// --double_quantization). A LoRA adapter (--adapter_name_or_path) runs beside the 4-bit
// weights. What cannot take them is refused by name: --merge_lora (no dense weight to merge
// into) and --quantization_bit 4 with --tp (the split needs dense weights).
#pragma once

#include <string>

#include "cli/flags.h"
#include "models/config/config.h"
#include "models/model.h"

namespace zt::cli {

// --quantization_bit 4, --quantization_type and --double_quantization, declared once for
// generate, chat, serve, export and estimate (LLaMA-Factory's names; the help says what a
// generating command does with them, and export and estimate give their own).
Flag four_bit_flag(const std::string& name);
// The group of the three, as a generating command takes them.
FlagGroup four_bit_flags();

// Sets `options` (before loading) so the linears of `config`'s model arrive in 4 bits when the
// folder is saved so or --quantization_bit 4 asks; refuses --merge_lora with such a base and
// the 4-bit settings without --quantization_bit 4. Logs that --quantization_bit leaves a folder
// already saved in 4 bits as it is.
void plan_four_bit_base(const Flags& flags, const models::ModelConfig& config, models::ModelOptions& options);

// Before a model is loaded dense to be split over --tp ranks: --quantization_bit 4 is refused;
// a "-bnb-4bit" folder is dequantized for the split, and the log says so.
void check_four_bit_tensor_parallel(const Flags& flags, const models::ModelConfig& config);

// The log's line once a 4-bit base is loaded: how many linears, their bytes against the dense
// ones. Empty for a dense model.
std::string four_bit_base_line(const models::CausalLM& model);

// --model_name_or_path with its adapters on `device` in `dtype`, the base kept in (or quantized
// to) 4 bits as plan_four_bit_base says, and the log's line about it: what generate, chat,
// serve and evaluate load.
models::CausalLM load_model_maybe_four_bit(Flags& flags, Device device, DType dtype);

}  // namespace zt::cli
