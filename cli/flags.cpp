#include "cli/flags.h"

#include <iostream>

#include "cli/command.h"
#include "models/hub/resolve_model.h"
#include "models/peft/peft_adapter.h"
#include "models/peft/peft_prefix_files.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/weights/weights.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt::cli {

Flags parse_flags(const std::vector<std::string>& args, const FlagSpec& spec) {
  const std::string see = "; see `zerotune " + spec.command + " --help`";
  Flags flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos && name.rfind("--", 0) == 0;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (auto alias = spec.aliases.find(name); alias != spec.aliases.end()) name = alias->second;
    if (spec.bool_flags.count(name)) {
      if (!inline_value) {
        value = "true";
        if (i + 1 < args.size() && (args[i + 1] == "true" || args[i + 1] == "false")) value = args[++i];
      }
      if (value != "true" && value != "false") fail(name + " takes true or false, got '" + value + "'");
    } else if (spec.value_flags.count(name)) {
      if (!inline_value && i + 1 >= args.size()) fail("option " + name + " needs a value");
      if (!inline_value) value = args[++i];
    } else {
      fail("unknown option '" + name + "'" + see);
    }
    flags[name] = value;
  }
  for (const std::string& required : spec.required)
    if (!flags.count(required)) fail("missing " + required + see);
  return flags;
}

int run_with_flags(const std::vector<std::string>& args, const FlagSpec& spec, const char* usage,
                   const std::function<int(Flags&)>& body) {
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      return 0;
    }
  Flags flags;
  try {
    flags = parse_flags(args, spec);
  } catch (const Error& e) {
    std::cerr << "zerotune " << spec.command << ": error: " << e.what() << "\n";
    return kExitUsage;
  }
  return body(flags);
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

const char* const kHubModelUsage =
    "  --model_name_or_path also takes a hub id (Org/Name): found in the hub cache (HF_HUB_CACHE, else\n"
    "                 HF_HOME/hub, else ~/.cache/huggingface/hub) or downloaded there from HF_ENDPOINT (with\n"
    "                 HF_TOKEN for gated repos); HF_HUB_OFFLINE=1 reads the cache only\n"
    "  --revision     the hub id's branch, tag or commit (default main)\n";

void resolve_model_flag(Flags& flags, models::hub::ModelParts parts) {
  if (!flags.count("--model_name_or_path")) return;
  const std::string revision = flags.count("--revision") ? flags.at("--revision") : "main";
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
  models::CausalLM model = models::load_model(flags["--model_name_or_path"], {.device = device, .dtype = dtype});
  if (flags.count("--adapter_name_or_path")) models::load_peft_adapter(model, flags["--adapter_name_or_path"]);
  if (flags.count("--ptuning_checkpoint")) load_ptuning_checkpoint(model, flags["--ptuning_checkpoint"]);
  return model;
}

}  // namespace zt::cli
