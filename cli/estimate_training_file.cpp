#include "cli/estimate_training_file.h"

#include <filesystem>

#include "runtime/log.h"
#include "runtime/usage_error.h"
#include "train/args/argument_table.h"
#include "train/args/base_quantization.h"
#include "train/args/training_arguments.h"
#include "train/training_job.h"

namespace zt::cli {
namespace {

// "--name" of a word written `--name`, `--name=value` or (after a file) `name=value`; empty for
// a value.
std::string flag_name_of(const std::string& word) {
  const std::size_t equals = word.find('=');
  const std::string name = word.substr(0, equals);
  if (name.rfind("--", 0) == 0) return name;
  return equals == std::string::npos ? "" : "--" + name;
}

// A flag of the estimate that train does not take: the GPUs, nodes and memory to fit.
bool estimate_only(const std::string& name, const FlagTable& estimate_table) {
  return !name.empty() && estimate_table.find(name) != nullptr && train::train_flag_table().find(name) == nullptr;
}

const char* method_name(const std::string& file, train::FinetuningType type) {
  switch (type) {
    case train::FinetuningType::kFull:
      return "full";
    case train::FinetuningType::kLora:
      return "lora";
    default:
      throw UsageError(file + ": finetuning_type " + name_of(type) +
                       ": zerotune estimate counts full fine-tuning and LoRA; estimate the file with "
                       "finetuning_type full for an upper bound");
  }
}

std::vector<std::string> words_of(const train::TrainingArguments& t, const std::string& file) {
  std::vector<std::string> words = {"--model_name_or_path", t.model_name_or_path,
                                    "--finetuning_type",    method_name(file, t.finetuning_type),
                                    "--lora_rank",          std::to_string(t.lora_rank),
                                    "--lora_target",        t.lora_target,
                                    "--micro_batch",        std::to_string(t.per_device_train_batch_size),
                                    "--max_length",         std::to_string(t.max_length)};
  if (const std::optional<train::BaseQuantization> four_bit = train::base_quantization(t)) {
    words.insert(words.end(), {"--quantization_bit", "4"});
    if (four_bit->double_quant) words.push_back("--double_quantization=true");
  }
  // Only when given, so a 4-bit base recomputes unless turned off, as train runs it.
  if (t.was_given("gradient_checkpointing"))
    words.push_back(std::string("--gradient_checkpointing=") + (t.gradient_checkpointing ? "true" : "false"));
  if (t.disable_gradient_checkpointing) words.push_back("--disable_gradient_checkpointing=true");
  if (!t.deepspeed.empty()) words.insert(words.end(), {"--deepspeed", t.deepspeed});
  if (t.was_given("model_revision")) words.insert(words.end(), {"--revision", t.model_revision});
  // float32 without --bf16 or --fp16, as train runs (a DeepSpeed config's "auto" precision
  // follows it, and one that asks for another is refused, as train refuses it).
  words.insert(words.end(), {"--dtype", train::training_dtype(t)});
  return words;
}

}  // namespace

bool starts_with_training_file(const std::vector<std::string>& args) {
  return !args.empty() && train::arguments_file_format(args[0]).has_value();
}

std::vector<std::string> estimate_words_of_training_file(const std::vector<std::string>& args,
                                                         const FlagTable& estimate_table) {
  std::vector<std::string> training = {args[0]}, own;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string name = flag_name_of(args[i]);
    ZT_REQUIRE_USAGE(name != "--config", args[0] +
                                             ": --config after a training file: the file names the model "
                                             "(model_name_or_path); drop --config or give it without the file");
    if (!estimate_only(name, estimate_table)) {
      training.push_back(args[i]);
      continue;
    }
    // Every estimate-only flag takes a value: joined (`--name=value`, or LLaMA-Factory's
    // `name=value`, written as the flag), or the next word unless that is a flag.
    own.push_back(args[i].rfind("--", 0) == 0 ? args[i] : "--" + args[i]);
    if (args[i].find('=') == std::string::npos && i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
      own.push_back(args[++i]);
  }
  train::TrainingArguments t = train::parse_training_arguments(training);
  ZT_REQUIRE_USAGE(!t.model_name_or_path.empty(),
                   args[0] + ": no model_name_or_path: add it to the file or after it (--model_name_or_path DIR)");
  // run_clm.py's block size as train resolves it from the model's files, where they are here.
  if (t.run_clm_style() && std::filesystem::is_directory(t.model_name_or_path))
    t = train::resolved_arguments(t, t.model_name_or_path);
  else if (t.run_clm_style())
    ZT_LOG(kWarn, args[0] << ": the block size comes from the model's tokenizer files, which a hub id does not give "
                             "here: counted at "
                          << t.max_length << " tokens (give block_size, or the local model folder)");
  if (t.stage != "sft" && t.stage != "pt")
    ZT_LOG(kWarn, args[0] << ": stage " << t.stage
                          << ": the estimate counts a supervised step; a preference step also runs the frozen "
                             "reference model and the chosen and rejected answers, so it needs more");
  std::vector<std::string> words = words_of(t, args[0]);
  words.insert(words.end(), own.begin(), own.end());
  return words;
}

}  // namespace zt::cli
