// `zerotune export`: a model folder written anew, with a LoRA adapter merged into its weights
// (LLaMA-Factory's export / PEFT's merge_and_unload + save_pretrained), so tools that know
// nothing of adapters can load the fine-tuned model; or a training checkpoint written out from
// its float32 master weights (train/checkpoint/checkpoint_export.h).
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "cli/export_output.h"
#include "cli/flags.h"
#include "cli/four_bit_base.h"
#include "models/peft/lora_files.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "runtime/error.h"
#include "runtime/usage_error.h"
#include "runtime/user_paths.h"
#include "train/checkpoint/checkpoint_export.h"

namespace zt::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDescription =
    "From a model folder (--model_name_or_path DIR) or a training checkpoint (--checkpoint CKPT).\n"
    "Writes OUT as a Hugging Face model folder (config.json, safetensors weights, generation config,\n"
    "the tokenizer files of DIR). With an adapter, W + (lora_alpha / r) * B A is computed in float32\n"
    "for every adapted weight and stored instead of W; --merge_lora is then required, since an\n"
    "adapter folder already is PEFT's format and is exported only merged. Without an adapter the\n"
    "model is written as it is (to change its dtype). A model folder saved in bitsandbytes' 4 bits\n"
    "is dequantized and written dense.\n"
    "With --checkpoint (an output_dir/checkpoint-N folder of zerotune train), the weights are the\n"
    "float32 master weights of its optimizer state (optimizer_index.json and the ranks' files, or\n"
    "an older checkpoint's optimizer.safetensors) for the trained parameters and DIR's for the\n"
    "others, as DeepSpeed's zero_to_fp32 recovers them; DIR is the model_name_or_path of the\n"
    "checkpoint's training_args.json unless --model_name_or_path is given. A LoRA checkpoint is\n"
    "written as a PEFT adapter folder, or merged into DIR's weights with --merge_lora; a P-Tuning\n"
    "checkpoint is refused (its prefix folder already is the exported form).\n";

FlagTable flag_table() {
  const std::string model_help = model_flag("--model_name_or_path").help;
  return {
      .command = "export",
      .description = kDescription,
      .groups =
          {{"What to export",
            {with_help(model_flag("--model_name_or_path"),
                       "the model to export, or with --checkpoint the base it was trained from (default: the "
                       "checkpoint's training_args.json's); " +
                           model_help),
             model_flag("--revision"),
             {.name = "--checkpoint", .value = "CKPT", .help = "an output_dir/checkpoint-N folder of zerotune train"},
             {.name = "--weights",
              .kind = FlagKind::kChoice,
              .help = "master: the optimizer's float32 masters; working: the checkpoint's model files (what a "
                      "checkpoint saved with --save_only_model always gives)",
              .default_value = "master",
              .choices = {"master", "working"}},
             with_help(model_flag("--adapter_name_or_path"), "a LoRA adapter folder, merged into the model"),
             {.name = "--merge_lora", .kind = FlagKind::kBool, .help = "merge the LoRA adapter into the weights"}}},
           {"Output",
            {{.name = "--output_dir",
              .value = "OUT",
              .help = "a new folder, written as a hidden .NAME.partial beside it and renamed into place once "
                      "complete. A folder that holds files is refused, unless --overwrite_output_dir (files of the "
                      "same names replaced); one holding the other kind of export (an adapter where a model goes, "
                      "or the reverse) always is",
              .aliases = {"--export_dir"}},
             {.name = "--overwrite_output_dir",
              .kind = FlagKind::kBool,
              .help = "write into a folder that holds files"},
             {.name = "--export_size",
              .kind = FlagKind::kPositiveInteger,
              .value = "GB",
              .help = "the largest weights file in GB (10^9 bytes): larger models are written as shards with an index "
                      "(LLaMA-Factory's export_size, transformers' max_shard_size)",
              .default_value = "5"},
             with_help(model_flag("--dtype"),
                       "default the torch_dtype of DIR/config.json, else float32; with --checkpoint, float32 for the "
                       "masters and the stored dtype for --weights working")}},
           {"QLoRA's base (a dense DIR quantized at load)",
            {with_help(four_bit_flag("--quantization_bit"),
                       "merge a QLoRA adapter into the base as that run computed with it: each linear weight "
                       "quantized to 4 bits and dequantized; without it the adapter is merged into DIR's weights as "
                       "they are, as LLaMA-Factory merges QLoRA adapters"),
             four_bit_flag("--quantization_type"), four_bit_flag("--double_quantization")}}},
      .required = {"--output_dir"}};
}

// What export refuses beyond the flag grammar: an adapter it would not merge, the reverse, and
// flags of one source (a model folder or a checkpoint) given with the other.
void check_flag_combinations(const Flags& flags) {
  const bool adapter = flags.count("--adapter_name_or_path") != 0;
  const bool merge = flags.is_true("--merge_lora");
  if (flags.count("--checkpoint")) {
    ZT_REQUIRE_USAGE(!adapter,
                     "--adapter_name_or_path with --checkpoint: a LoRA checkpoint carries its adapter; drop "
                     "--adapter_name_or_path");
    return;
  }
  ZT_REQUIRE_USAGE(flags.count("--model_name_or_path"), "export needs --model_name_or_path DIR or --checkpoint CKPT");
  ZT_REQUIRE_USAGE(!flags.count("--weights"), "--weights chooses among a checkpoint's weights: it needs --checkpoint");
  ZT_REQUIRE_USAGE(!adapter || merge,
                   "--adapter_name_or_path without --merge_lora: an adapter is exported merged into the model; add "
                   "--merge_lora (the adapter folder itself already is PEFT's format)");
  ZT_REQUIRE_USAGE(!merge || adapter, "--merge_lora needs the adapter to merge: add --adapter_name_or_path");
  for (const char* flag : {"--quantization_type", "--double_quantization"})
    ZT_REQUIRE_USAGE(!flags.count(flag) || flags.count("--quantization_bit"),
                     std::string(flag) + " describes the 4-bit base of --quantization_bit 4: add that");
  ZT_REQUIRE_USAGE(!flags.count("--quantization_bit") || merge,
                   "--quantization_bit 4 says which base a QLoRA adapter is merged into: it needs "
                   "--adapter_name_or_path and --merge_lora");
}

// --quantization_bit 4: the base as the QLoRA run computed with it (models/quant/).
void round_trip_base(Flags& flags, models::CausalLM& model, DType stored) {
  if (!flags.count("--quantization_bit")) return;
  ZT_REQUIRE_USAGE(!model.config().bnb_4bit, "--quantization_bit 4: " + model.config().source +
                                                 " is already saved in 4 bits, and its dequantized weights are what "
                                                 "the adapter is merged into: drop --quantization_bit");
  const models::quant::Quant4Options options{
      .type = ops::quant4::parse_quant4_type(flags.text("--quantization_type"), "--quantization_type"),
      .double_quant = flags.is_true("--double_quantization"),
      .blocksize = 64};
  models::quant::round_trip_linears(model, options, stored);
  std::cerr << "the base's linear weights quantized to 4 bits (" << ops::quant4::quant4_type_name(options.type)
            << (options.double_quant ? ", double quantization" : "")
            << ") and dequantized, as the QLoRA run saw them\n";
}

std::optional<DType> dtype_flag(Flags& flags) {
  if (!flags.count("--dtype")) return std::nullopt;
  const DType dtype = parse_dtype(flags["--dtype"]);
  ZT_REQUIRE_USAGE(is_floating(dtype), "--dtype " + flags["--dtype"] + ": the weights need a floating-point dtype");
  return dtype;
}

std::size_t max_shard_bytes(const Flags& flags) {
  return static_cast<std::size_t>(flags.integer("--export_size")) * 1'000'000'000;
}

// A LoRA checkpoint exports as an adapter unless merged; everything else as a model.
ExportKind export_kind(const Flags& flags) {
  const bool adapter_checkpoint =
      flags.count("--checkpoint") && fs::exists(fs::path(flags.at("--checkpoint")) / "adapter_config.json");
  return adapter_checkpoint && !flags.is_true("--merge_lora") ? ExportKind::kAdapter : ExportKind::kModel;
}

int export_checkpoint(Flags& flags, ExportFolder& out) {
  train::CheckpointExport request{.checkpoint = flags["--checkpoint"],
                                  .output_dir = flags["--output_dir"],
                                  .write_dir = out.write_dir(),
                                  .base_model = flags.text("--model_name_or_path"),
                                  .base_revision = flags.count("--revision") ? flags["--revision"] : "",
                                  .working_weights = flags.text("--weights") == "working",
                                  .merge_lora = flags.is_true("--merge_lora"),
                                  .dtype = dtype_flag(flags),
                                  .max_shard_bytes = max_shard_bytes(flags)};
  const std::string done = train::export_checkpoint(request);
  out.commit();
  std::cerr << done << "\n";
  return 0;
}

int export_model(Flags& flags, ExportFolder& out) {
  const std::string name = flags["--model_name_or_path"];
  resolve_model_flag(flags);
  const std::string dir = flags["--model_name_or_path"];
  const std::optional<DType> asked = dtype_flag(flags);
  const models::ModelConfig config = models::load_config(dir);
  const std::string dtype_text = config.torch_dtype.empty() ? std::string("float32") : config.torch_dtype;
  const DType dtype = asked ? *asked : parse_dtype(dtype_text);
  ZT_REQUIRE(is_floating(dtype), config.source + ": torch_dtype " + dtype_text +
                                     " is no floating-point dtype for the weights; give --dtype");

  // Merged in float32 on the CPU, then rounded once to the saved dtype.
  models::CausalLM model = models::load_model(dir, {.device = Device::cpu(), .dtype = DType::kF32});
  round_trip_base(flags, model, parse_dtype(dtype_text));
  if (flags.count("--adapter_name_or_path")) {
    const models::LoraConfig lora = models::load_lora_adapter(model, flags["--adapter_name_or_path"]);
    models::merge_lora(model);
    std::cerr << "merged the LoRA adapter " << flags["--adapter_name_or_path"] << " (r " << lora.rank << ", alpha "
              << lora.alpha << ")\n";
  }
  models::save_model(model, out.write_dir(), {.max_shard_bytes = max_shard_bytes(flags), .dtype = dtype});
  out.commit();
  std::cerr << "exported " << name << " to " << flags["--output_dir"] << " (" << dtype_name(dtype) << ")\n";
  return 0;
}

// The model folder itself (or the checkpoint) as --output_dir: its files would be replaced
// while they are read.
void refuse_writing_over_the_input(Flags& flags) {
  const std::string out = flags.at("--output_dir");
  std::error_code different;  // a path that does not exist is no other one
  for (const char* input : {"--model_name_or_path", "--checkpoint", "--adapter_name_or_path"})
    if (flags.count(input))
      ZT_REQUIRE_USAGE(!fs::equivalent(flags.at(input), out, different),
                       "--output_dir " + out + " is the folder of " + input + " itself; export into another folder");
}

int run_export(const std::vector<std::string>& args) {
  return run_with_flags(args, flag_table(), [](Flags& flags) {
    // llamafactory-cli export merges the adapter its file names: so does a file given here.
    const bool merged_by_file = !flags.arguments_file.empty() && !flags.count("--checkpoint");
    if (merged_by_file && flags.count("--adapter_name_or_path") && !flags.count("--merge_lora"))
      flags["--merge_lora"] = "true";
    check_flag_combinations(flags);
    dtype_flag(flags);  // a --dtype that is no floating-point type is refused before any work
    require_writable_folder(flags.at("--output_dir"), "--output_dir");
    refuse_writing_over_the_input(flags);
    ExportFolder out(flags.at("--output_dir"), export_kind(flags), flags.is_true("--overwrite_output_dir"));
    return flags.count("--checkpoint") ? export_checkpoint(flags, out) : export_model(flags, out);
  });
}

const Registration registration{{"export",
                                 "write a model folder, with a LoRA adapter merged into it, or from a checkpoint",
                                 run_export, flag_table}};

}  // namespace
}  // namespace zt::cli
