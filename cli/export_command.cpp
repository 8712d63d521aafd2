// `zerotune export`: a model folder written anew, with a LoRA adapter merged into its weights
// (LLaMA-Factory's export / PEFT's merge_and_unload + save_pretrained), so tools that know
// nothing of adapters can load the fine-tuned model.
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "cli/command.h"
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

const std::set<std::string> kValueFlags{"--model_name_or_path", "--adapter_name_or_path", "--output_dir",
                                        "--export_dir", "--dtype"};

std::map<std::string, std::string> parse_flags(const std::vector<std::string>& args) {
  std::map<std::string, std::string> flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos && name.rfind("--", 0) == 0) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "--merge_lora") {
      if (!inline_value) {
        value = "true";
        if (i + 1 < args.size() && (args[i + 1] == "true" || args[i + 1] == "false")) value = args[++i];
      }
      if (value != "true" && value != "false") fail("--merge_lora takes true or false, got '" + value + "'");
    } else if (kValueFlags.count(name)) {
      if (!inline_value && i + 1 >= args.size()) fail("option " + name + " needs a value");
      if (!inline_value) value = args[++i];
    } else {
      fail("unknown option '" + name + "'; see `zerotune export --help`");
    }
    flags[name == "--export_dir" ? "--output_dir" : name] = value;
  }
  for (const char* required : {"--model_name_or_path", "--output_dir"})
    if (!flags.count(required)) fail(std::string("missing ") + required + "; see `zerotune export --help`");
  const bool adapter = flags.count("--adapter_name_or_path") != 0;
  const bool merge = flags.count("--merge_lora") && flags["--merge_lora"] == "true";
  if (adapter && !merge)
    fail("--adapter_name_or_path without --merge_lora: an adapter is exported merged into the model; add "
         "--merge_lora (the adapter folder itself already is PEFT's format)");
  if (merge && !adapter) fail("--merge_lora needs the adapter to merge: add --adapter_name_or_path");
  return flags;
}

int run_export(const std::vector<std::string>& args) {
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
  std::map<std::string, std::string> flags;
  try {
    flags = parse_flags(args);
  } catch (const Error& e) {
    std::cerr << "zerotune export: error: " << e.what() << "\n";
    return kExitUsage;
  }
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

const Registration registration{{"export", "write a model folder, with a LoRA adapter merged into it", run_export}};

}  // namespace
}  // namespace zt::cli
