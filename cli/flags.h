// The flag grammar of the subcommands that run a model, as HF's argument parser reads
// flags: `--name value`, `--name=value`, and booleans as `--flag`, `--flag true` or
// `--flag false`. Also what those commands share after parsing: the device, dtype and
// adapters (LoRA, P-Tuning prefix) a model is loaded with.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/hub/model_files.h"
#include "models/model.h"

namespace zt::cli {

struct FlagSpec {
  std::string command;  // "generate": messages say `zerotune generate --help`
  std::set<std::string> value_flags = {};
  std::set<std::string> bool_flags = {};
  std::vector<std::string> required = {};
  std::vector<std::string> one_of = {};             // exactly one of these must be given (when not empty)
  std::map<std::string, std::string> aliases = {};  // another accepted name -> the flag's name
  // Value flags whose value must be a number, a whole number, or (either of them) above 0;
  // and those whose value is one of a few words.
  std::set<std::string> number_flags = {};
  std::set<std::string> integer_flags = {};
  std::set<std::string> positive_flags = {};
  std::map<std::string, std::vector<std::string>> choices = {};
};

using Flags = std::map<std::string, std::string>;

// Every flag of `args` by name (booleans as "true"/"false"). An unknown flag (with the
// nearest known one, or the command's name for a flag of LLaMA-Factory or of training), a
// missing value, a value of the wrong kind or a missing required flag throws zt::UsageError
// naming it.
Flags parse_flags(const std::vector<std::string>& args, const FlagSpec& spec);

// A command's whole run: --help prints `usage`; otherwise `body` runs with the parsed flags
// (a flag error is a zt::UsageError, which the CLI exits with code 2 for).
int run_with_flags(const std::vector<std::string>& args, const FlagSpec& spec, const char* usage,
                   const std::function<int(Flags&)>& body);

// `text` as a number for `flag`; anything else is a zt::UsageError naming both.
double number_flag(const std::string& flag, const std::string& text);
std::int64_t integer_flag(const std::string& flag, const std::string& text);
// The whole number --name holds, or `fallback` when it is not given.
std::int64_t integer_flag_or(const Flags& flags, const std::string& name, std::int64_t fallback);

// The flags every model-running command takes beside its own.
inline const std::set<std::string> kModelFlags{"--model_name_or_path",   "--revision",          "--device", "--dtype",
                                               "--adapter_name_or_path", "--ptuning_checkpoint"};

// Usage lines for --revision and hub ids, shared by every command that takes a model.
extern const char* const kHubModelUsage;

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
