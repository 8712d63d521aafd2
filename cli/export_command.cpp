// `zerotune export`: a model folder written anew, with a LoRA adapter merged into its weights
// (LLaMA-Factory's export / PEFT's merge_and_unload + save_pretrained), so tools that know
// nothing of adapters can load the fine-tuned model.
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/flags.h"
#include "models/lora_files.h"
#include "models/weights.h"
#include "runtime/error.h"

namespace zt::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: zerotune export --model_name_or_path DIR --output_dir OUT\n"
    "                       [--adapter_name_or_path ADAPTER --merge_lora] [--dtype float32|bfloat16|float16]\n\n"
    "Writes OUT as a Hugging Face model folder (config.json, safetensors weights, generation config,\n"
    "the tokenizer files of DIR). With an adapter, W + (lora_alpha / r) * B A is computed in float32\n"
    "for every adapted weight and stored instead of W; --merge_lora is then required, since an\n"
    "adapter folder already is PEFT's format and is exported only merged. Without an adapter the\n"
    "model is written as it is (to change its dtype).\n"
    "  --output_dir   also accepted as --export_dir (LLaMA-Factory's name)\n"
    "  --dtype        default the torch_dtype of DIR/config.json, else float32\n";

const FlagSpec kFlagSpec{.command = "export",
                         .value_flags = {"--model_name_or_path", "--adapter_name_or_path", "--output_dir", "--dtype"},
                         .bool_flags = {"--merge_lora"},
                         .required = {"--model_name_or_path", "--output_dir"},
                         .aliases = {{"--export_dir", "--output_dir"}}};

// What export refuses beyond the flag grammar: an adapter it would not merge, or the reverse.
void check_merge_flags(const Flags& flags) {
  const bool adapter = flags.count("--adapter_name_or_path") != 0;
  const bool merge = flags.count("--merge_lora") && flags.at("--merge_lora") == "true";
  if (adapter && !merge)
    fail("--adapter_name_or_path without --merge_lora: an adapter is exported merged into the model; add "
         "--merge_lora (the adapter folder itself already is PEFT's format)");
  if (merge && !adapter) fail("--merge_lora needs the adapter to merge: add --adapter_name_or_path");
}

int export_model(Flags& flags) {
  const std::string dir = flags["--model_name_or_path"], out = flags["--output_dir"];
  ZT_REQUIRE(!fs::exists(out) || !fs::equivalent(dir, out),
             "--output_dir " + out + " is the model folder itself; export into another folder");
  const models::ModelConfig config = models::load_config(dir);
  const std::string dtype_text = flags.count("--dtype")         ? flags["--dtype"]
                                 : config.torch_dtype.empty() ? std::string("float32")
                                                              : config.torch_dtype;
  const DType dtype = parse_dtype(dtype_text);
  ZT_REQUIRE(is_floating(dtype), "--dtype " + dtype_text + ": the weights need a floating-point dtype");

  // Merged in float32 on the CPU, then rounded once to the saved dtype.
  models::CausalLM model = models::load_model(dir, {.device = Device::cpu(), .dtype = DType::kF32});
  if (flags.count("--adapter_name_or_path")) {
    const models::LoraConfig lora = models::load_lora_adapter(model, flags["--adapter_name_or_path"]);
    models::merge_lora(model);
    std::cerr << "merged the LoRA adapter " << flags["--adapter_name_or_path"] << " (r " << lora.rank << ", alpha "
              << lora.alpha << ")\n";
  }
  models::save_model(model, out, {.dtype = dtype});
  std::cerr << "exported " << dir << " to " << out << " (" << dtype_name(dtype) << ")\n";
  return 0;
}

int run_export(const std::vector<std::string>& args) {
  return run_with_flags(args, kFlagSpec, kUsage, [](Flags& flags) {
    try {
      check_merge_flags(flags);
    } catch (const Error& e) {
      std::cerr << "zerotune export: error: " << e.what() << "\n";
      return kExitUsage;
    }
    return export_model(flags);
  });
}

const Registration registration{{"export", "write a model folder, with a LoRA adapter merged into it", run_export}};

}  // namespace
}  // namespace zt::cli
