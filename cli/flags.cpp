#include "cli/flags.h"

#include "models/hub/resolve_model.h"
#include "models/peft/peft_adapter.h"
#include "models/peft/peft_prefix_files.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/weights/weights.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/usage_error.h"

namespace zt::cli {

Flag model_flag(const std::string& name) {
  static const std::vector<Flag> declared = {
      {.name = "--model_name_or_path",
       .value = "DIR",
       .help = "the model folder (config.json, safetensors weights, tokenizer files), or a hub id (Org/Name): "
               "found in the hub cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub) or "
               "downloaded there from HF_ENDPOINT (with HF_TOKEN for gated repos); HF_HUB_OFFLINE=1 reads the "
               "cache only"},
      {.name = "--revision",
       .value = "REV",
       .help = "the hub id's branch, tag or commit",
       .default_value = "main",
       .aliases = {"--model_revision"}},
      {.name = "--adapter_name_or_path",
       .value = "ADAPTER",
       .help = "a PEFT adapter folder applied to the model: LoRA or prefix tuning"},
      {.name = "--ptuning_checkpoint",
       .value = "DIR",
       .help = "a P-Tuning v2 prefix (zerotune train --finetuning_type ptuning); a PEFT prefix-tuning folder is "
               "also taken here"},
      {.name = "--device",
       .value = "cpu|cuda|cuda:N",
       .help = "where the model runs (default cuda when a GPU is usable, else cpu)",
       .check = [](const std::string& value) { parse_device(value); }},
      {.name = "--dtype",
       .value = "D",
       .help = "float32, bfloat16 or float16 (default bfloat16 on a GPU, float32 on the CPU)",
       .check = [](const std::string& value) { parse_dtype(value); }},
  };
  return flag_named(declared, name);
}

Flag with_help(Flag flag, std::string help) {
  flag.help = std::move(help);
  return flag;
}

FlagGroup model_flags() {
  FlagGroup group{"Model", {}};
  for (const char* name :
       {"--model_name_or_path", "--revision", "--adapter_name_or_path", "--ptuning_checkpoint", "--device", "--dtype"})
    group.flags.push_back(model_flag(name));
  return group;
}

Device device_from_flags(const Flags& flags) {
  const Device device = flags.count("--device") ? parse_device(flags.at("--device"))
                        : cuda_available()      ? Device::cuda()
                                                : Device::cpu();
  if (device.is_cuda()) require_gpu("--device " + device.str());
  return device;
}

DType dtype_from_flags(const Flags& flags, Device device) {
  return flags.count("--dtype") ? parse_dtype(flags.at("--dtype")) : device.is_cuda() ? DType::kBF16 : DType::kF32;
}

void resolve_model_flag(Flags& flags, models::hub::ModelParts parts) {
  if (!flags.count("--model_name_or_path")) return;
  const std::string revision = flags.text("--revision");
  flags["--model_name_or_path"] = models::hub::resolve_model_path(flags.at("--model_name_or_path"), revision, parts);
}

models::CausalLM load_model_from_flags(Flags& flags) {
  const Device device = device_from_flags(flags);
  return load_model_from_flags(flags, device, dtype_from_flags(flags, device));
}

namespace {

// --ptuning_checkpoint takes zerotune's (ChatGLM-style) checkpoints and, for convenience, a
// PEFT prefix-tuning folder too, which --adapter_name_or_path is the usual way to pass.
void load_ptuning_checkpoint(models::CausalLM& model, const std::string& dir) {
  if (model.prefix_source())
    fail("--ptuning_checkpoint " + dir + ": --adapter_name_or_path already gave the model a prefix; pass one of them");
  if (!models::is_peft_adapter_folder(dir)) {
    models::load_prefix_checkpoint(model, dir);
    return;
  }
  if (models::peft_adapter_kind(dir) != models::PeftAdapterKind::kPrefix)
    fail("--ptuning_checkpoint " + dir + " is a LoRA adapter: pass it as --adapter_name_or_path");
  models::load_peft_prefix(model, dir);
}

}  // namespace

models::CausalLM load_model_from_flags(Flags& flags, Device device, DType dtype) {
  return load_model_from_flags(flags, models::ModelOptions{.device = device, .dtype = dtype});
}

models::CausalLM load_model_from_flags(Flags& flags, const models::ModelOptions& options) {
  models::CausalLM model = models::load_model(flags["--model_name_or_path"], options);
  if (flags.count("--adapter_name_or_path")) models::load_peft_adapter(model, flags["--adapter_name_or_path"]);
  if (flags.count("--ptuning_checkpoint")) load_ptuning_checkpoint(model, flags["--ptuning_checkpoint"]);
  return model;
}

}  // namespace zt::cli
