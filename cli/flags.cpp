#include "cli/flags.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>

#include "models/hub/resolve_model.h"
#include "models/peft/peft_adapter.h"
#include "models/peft/peft_prefix_files.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/weights/weights.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/terminal/closest_name.h"
#include "runtime/usage_error.h"
#include "text/chat_template/chat_template.h"

namespace zt::cli {

namespace {

// Names users bring from LLaMA-Factory or from training to a command that calls the thing
// otherwise: the error names the command's flag. (Where the meaning is the same, the command
// takes the name as an alias instead.)
struct ForeignName {
  const char* name;
  const char* what;        // completes "--name ..."
  const char* equivalent;  // the command's flag (and value) for it; it applies where the command has that flag
};

const ForeignName kForeignNames[] = {
    {"--dataset", "is LLaMA-Factory's name for datasets of dataset_info.json", "--validation_file FILE"},
    {"--eval_dataset", "is LLaMA-Factory's name for datasets of dataset_info.json", "--validation_file FILE"},
    {"--dataset", "is LLaMA-Factory's name for datasets of dataset_info.json", "--input_file FILE"},
    {"--infer_dtype", "is LLaMA-Factory's name", "--dtype"},
    {"--checkpoint_dir", "is older LLaMA-Factory's name for an adapter", "--adapter_name_or_path"},
    {"--bf16", "is a training flag", "--dtype bfloat16"},
    {"--fp16", "is a training flag", "--dtype float16"},
    {"--max_length", "counts the prompt too in transformers' generate", "--max_new_tokens"},
};

bool has_flag(const FlagSpec& spec, const std::string& name) {
  return spec.value_flags.count(name) || spec.bool_flags.count(name);
}

std::string unknown_flag_message(const std::string& name, const FlagSpec& spec) {
  const std::string command = "zerotune " + spec.command;
  for (const ForeignName& foreign : kForeignNames) {
    const std::string equivalent = foreign.equivalent;
    if (name == foreign.name && has_flag(spec, equivalent.substr(0, equivalent.find(' '))))
      return name + " " + foreign.what + "; " + command + " takes " + equivalent;
  }
  std::vector<std::string> known(spec.value_flags.begin(), spec.value_flags.end());
  known.insert(known.end(), spec.bool_flags.begin(), spec.bool_flags.end());
  for (const auto& [alias, flag] : spec.aliases) known.push_back(alias);
  for (std::string& flag : known) flag.erase(0, 2);  // compared without the dashes every name has
  std::optional<std::string> closest = closest_name(name.substr(name.rfind("--", 0) == 0 ? 2 : 0), known);
  if (closest) closest = "--" + *closest;
  return "unknown option '" + name + "'" + (closest ? " (did you mean " + *closest + "?)" : "") + "; see `" + command +
         " --help`";
}

// A value flag's value, when the spec says what kind it must be.
void check_value(const std::string& name, const std::string& value, const FlagSpec& spec) {
  const bool positive = spec.positive_flags.count(name) != 0;
  if (spec.integer_flags.count(name))
    ZT_REQUIRE_USAGE(integer_flag(name, value) > 0 || !positive,
                     name + " must be a positive whole number, got '" + value + "'");
  if (spec.number_flags.count(name))
    ZT_REQUIRE_USAGE(number_flag(name, value) > 0 || !positive, name + " must be above 0, got '" + value + "'");
  if (name == "--device" || name == "--dtype" || name == "--template") {
    // Words other layers know; a wrong one is still the command line's mistake.
    try {
      if (name == "--device") parse_device(value);
      if (name == "--dtype") parse_dtype(value);
      if (name == "--template") models::make_chat_template(value);
    } catch (const Error& e) {
      fail_usage(name + ": " + e.what());
    }
  }
  const auto choices = spec.choices.find(name);
  if (choices == spec.choices.end()) return;
  const std::vector<std::string>& accepted = choices->second;
  if (std::find(accepted.begin(), accepted.end(), value) != accepted.end()) return;
  std::string words = accepted.front();
  for (std::size_t i = 1; i < accepted.size(); ++i) words += (i + 1 == accepted.size() ? " or " : ", ") + accepted[i];
  fail_usage(name + " takes " + words + ", got '" + value + "'");
}

}  // namespace

Flags parse_flags(const std::vector<std::string>& args, const FlagSpec& spec) {
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
      ZT_REQUIRE_USAGE(value == "true" || value == "false", name + " takes true or false, got '" + value + "'");
    } else if (spec.value_flags.count(name)) {
      ZT_REQUIRE_USAGE(inline_value || i + 1 < args.size(), "option " + name + " needs a value");
      if (!inline_value) value = args[++i];
      check_value(name, value, spec);
    } else {
      fail_usage(unknown_flag_message(name, spec));
    }
    flags[name] = value;
  }
  for (const std::string& required : spec.required)
    ZT_REQUIRE_USAGE(flags.count(required), "missing " + required + "; see `zerotune " + spec.command + " --help`");
  if (!spec.one_of.empty()) {
    const auto given = std::count_if(spec.one_of.begin(), spec.one_of.end(),
                                     [&](const std::string& name) { return flags.count(name) > 0; });
    std::string names;
    for (const std::string& name : spec.one_of) names += (names.empty() ? "" : " or ") + name;
    ZT_REQUIRE_USAGE(given == 1, "give exactly one of " + names + "; see `zerotune " + spec.command + " --help`");
  }
  return flags;
}

int run_with_flags(const std::vector<std::string>& args, const FlagSpec& spec, const char* usage,
                   const std::function<int(Flags&)>& body) {
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      return 0;
    }
  Flags flags = parse_flags(args, spec);
  return body(flags);
}

double number_flag(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  fail_usage(flag + " must be a number, got '" + text + "'");
}

std::int64_t integer_flag(const std::string& flag, const std::string& text) {
  const double value = number_flag(flag, text);
  ZT_REQUIRE_USAGE(value == std::floor(value) && std::abs(value) < 9.0e15,
                   flag + " must be a whole number, got '" + text + "'");
  return static_cast<std::int64_t>(value);
}

std::int64_t integer_flag_or(const Flags& flags, const std::string& name, std::int64_t fallback) {
  return flags.count(name) ? integer_flag(name, flags.at(name)) : fallback;
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
  return load_model_from_flags(flags, models::ModelOptions{.device = device, .dtype = dtype});
}

models::CausalLM load_model_from_flags(Flags& flags, const models::ModelOptions& options) {
  models::CausalLM model = models::load_model(flags["--model_name_or_path"], options);
  if (flags.count("--adapter_name_or_path")) models::load_peft_adapter(model, flags["--adapter_name_or_path"]);
  if (flags.count("--ptuning_checkpoint")) load_ptuning_checkpoint(model, flags["--ptuning_checkpoint"]);
  return model;
}

}  // namespace zt::cli
