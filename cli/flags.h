// The flags of the model a command runs (declared once, in the grammar of cli/flag_table.h)
// and what those commands share after parsing: the device, dtype and adapters (LoRA,
// P-Tuning prefix) a model is loaded with.
#pragma once

#include <string>

#include "cli/flag_table.h"
#include "models/hub/model_files.h"
#include "models/model.h"

namespace zt::cli {

// The flags of the model a command loads, each declared once for every command that takes
// it: "--model_name_or_path" (a folder or hub id), "--revision", "--adapter_name_or_path",
// "--ptuning_checkpoint", "--device" and "--dtype". A name not among them is a bug.
Flag model_flag(const std::string& name);
// `flag` with a command's own help for it.
Flag with_help(Flag flag, std::string help);
// The group of all six, as the commands that run a model take them.
FlagGroup model_flags();

// --model_name_or_path made a local folder (models/hub/resolve_model.h): a hub id is found in
// the hub cache at --revision (default main), or downloaded there with the files `parts`
// names. Afterwards the flag holds the folder, which is what every loader reads.
void resolve_model_flag(Flags& flags, models::hub::ModelParts parts = models::hub::kWholeModel);

// The model of --model_name_or_path on --device (default: the GPU when one is usable) in
// --dtype (default bfloat16 on a GPU, float32 on the CPU), with --adapter_name_or_path's PEFT
// adapter (LoRA or prefix tuning) and --ptuning_checkpoint's prefix applied.
models::CausalLM load_model_from_flags(Flags& flags);
// The same model on `device` in `dtype` (tensor parallelism loads it on the CPU to split it).
models::CausalLM load_model_from_flags(Flags& flags, Device device, DType dtype);
// The same model loaded with `options` (a 4-bit base: cli/four_bit_base.h).
models::CausalLM load_model_from_flags(Flags& flags, const models::ModelOptions& options);

// --device, else the GPU when one is usable; a GPU that is not usable is an error.
Device device_from_flags(const Flags& flags);
// --dtype, else bfloat16 on a GPU and float32 on the CPU.
DType dtype_from_flags(const Flags& flags, Device device);

}  // namespace zt::cli
