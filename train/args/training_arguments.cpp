#include "train/args/training_arguments.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "runtime/error.h"
#include "runtime/flags/flag_help.h"
#include "runtime/json_text.h"
#include "runtime/log.h"
#include "runtime/rank.h"
#include "runtime/user_paths.h"
#include "train/args/argument_reader.h"
#include "train/args/argument_table.h"
#include "train/args/base_quantization.h"
#include "train/args/other_arguments.h"
#include "train/args/report_to.h"
#include "train/args/yaml_file.h"

namespace zt::train {
namespace {

using OrderedJson = nlohmann::ordered_json;

// FastChat's train_lora.py and Qwen's finetune.py: their LoRA defaults where their names are
// used (Qwen's when it says use_lora), and Qwen's use_lora choosing the method.
void apply_training_script_lora(TrainingArguments& args, std::vector<std::string>& errors) {
  if (!args.training_script_lora_style()) return;
  const bool qwen = args.use_lora.has_value();
  if (args.use_lora) {
    const FinetuningType type = *args.use_lora ? FinetuningType::kLora : FinetuningType::kFull;
    if (args.was_given("finetuning_type") && args.finetuning_type != type)
      errors.push_back(std::string("--use_lora ") + (*args.use_lora ? "true" : "false") + " and --finetuning_type " +
                       name_of(args.finetuning_type) + " disagree; give one");
    args.finetuning_type = type;
  }
  if (!args.was_given("lora_rank")) args.lora_rank = qwen ? 64 : 8;
  if (!args.was_given("lora_alpha")) args.lora_alpha = 16;
  if (!args.was_given("lora_dropout")) args.lora_dropout = 0.05;
  if (!args.was_given("lora_target"))
    args.lora_target = qwen ? "q_proj,k_proj,v_proj,o_proj,up_proj,gate_proj,down_proj" : "q_proj,v_proj";
  if (args.q_lora && !args.quantization_bit) args.quantization_bit = 4;  // the scripts' nf4, double quantization
}

// The method a command implies when it names none. HF's training scripts (stanford_alpaca's and
// FastChat's train.py, Qwen's finetune.py without use_lora) train every weight, so their names
// (data_path, model_max_length, lazy_preprocess) mean a full fine-tune; ChatGLM's P-Tuning
// main.py names pre_seq_len alone. Otherwise LoRA, LLaMA-Factory's default.
void apply_implied_method(TrainingArguments& args) {
  if (args.was_given("finetuning_type") || args.use_lora || args.llama_factory_style() ||
      args.training_script_lora_style())
    return;
  for (const char* lora : {"lora_rank", "lora_alpha", "lora_dropout", "lora_target"})
    if (args.was_given(lora)) return;
  for (const char* prefix : {"pre_seq_len", "prefix_projection"})
    if (args.was_given(prefix)) {
      args.finetuning_type = FinetuningType::kPtuning;
      args.method_implied_by = std::string("--") + prefix + ", as ChatGLM's P-Tuning v2 script";
      return;
    }
  if (asks_for_4bit(args)) return;  // a 4-bit base trains LoRA (or, above, a prefix)
  // ChatGLM's main.py without pre_seq_len is its full fine-tune (ds_train_finetune.sh).
  for (const char* script_name : {"data_path", "model_max_length", "lazy_preprocess", "prompt_column",
                                  "response_column", "max_source_length", "max_target_length"})
    if (args.was_given(script_name)) {
      args.finetuning_type = FinetuningType::kFull;
      args.method_implied_by =
          std::string("--") + script_name + ", a name of HF's training scripts, which train every weight";
      return;
    }
}

// ChatGLM's main.py caps the prompt at max_source_length and the answer at max_target_length,
// in a sequence of max_seq_length = source + target + 1; zerotune cuts a sample to max_length,
// sharing it between prompt and answer as LLaMA-Factory's cutoff_len does.
void apply_chatglm_lengths(TrainingArguments& args, std::vector<std::string>& errors) {
  if (!args.max_source_length && !args.max_target_length) return;
  if (!args.max_source_length) args.max_source_length = 1024;  // main.py's defaults
  if (!args.max_target_length) args.max_target_length = 128;
  if (*args.max_source_length <= 0 || *args.max_target_length <= 0) {
    errors.push_back("--max_source_length and --max_target_length must be > 0");
    return;
  }
  const std::int64_t sequence = *args.max_source_length + *args.max_target_length + 1;
  if (args.was_given("max_length")) return;
  args.max_length = sequence;
  args.warnings.push_back("--max_source_length " + std::to_string(*args.max_source_length) +
                          " and --max_target_length " + std::to_string(*args.max_target_length) +
                          ": samples are cut to --max_length " + std::to_string(sequence) +
                          " (their sum + 1, ChatGLM's sequence length), shared between prompt and answer as "
                          "LLaMA-Factory's cutoff_len shares it, where ChatGLM's main.py caps each apart");
}

// What HF and LLaMA-Factory imply from what was given.
void apply_implied(TrainingArguments& args, std::vector<std::string>& errors) {
  apply_implied_method(args);
  // HF's __post_init__: an evaluation strategy turns do_eval on (the scripts' and LLaMA-Factory's
  // evaluation at the end).
  if (args.eval_strategy != IntervalStrategy::kNo) args.do_eval = true;
  if (args.use_cpu) {
    if (args.was_given("device") && args.device != "cpu")
      errors.push_back("--use_cpu (or --no_cuda) asks for the CPU but --device is " + args.device + "; give one");
    args.device = "cpu";
  }
  if (args.run_name.empty()) args.run_name = args.output_dir;  // HF's name for an unnamed run
  if (args.neat_packing) args.packing = true;
  if (args.stage == "pt" && !args.was_given("packing")) args.packing = true;  // LLaMA-Factory packs under pt
  if (!args.was_given("gradient_checkpointing")) {
    // LLaMA-Factory checkpoints every model unless told not to.
    if (args.llama_factory_style()) args.gradient_checkpointing = !args.disable_gradient_checkpointing;
    if (args.disable_gradient_checkpointing) args.gradient_checkpointing = false;
  }
  if (args.llama_factory_style() && !args.was_given("max_length")) args.max_length = 2048;  // cutoff_len's default
  apply_chatglm_lengths(args, errors);
  // A .txt file in an HF-style command trains one sample per line; run_clm's blocks need its names.
  const bool text_file =
      args.train_file.size() > 4 && args.train_file.compare(args.train_file.size() - 4, 4, ".txt") == 0;
  if (text_file && !args.llama_factory_style() && !args.run_clm_style())
    args.warnings.push_back(args.train_file +
                            ": each line trains as one sample ending with eos (zerotune's plain-text samples); "
                            "for run_clm.py's blocks (the texts chained and cut into blocks of N tokens) give "
                            "--block_size N");
  apply_training_script_lora(args, errors);
}

// The accepted names without a member, judged on their final values: a warning each (once),
// or a refusal.
void judge_other_arguments(TrainingArguments& args, std::vector<std::string>& errors) {
  for (const auto& [name, value] : args.other_arguments.items()) {
    // run_clm's config_name and tokenizer_name naming the model's own folder ask for nothing else.
    if ((name == "config_name" || name == "tokenizer_name") && value == args.model_name_or_path) continue;
    const Judgement judgement = judge(*find_other_argument(name), value);
    if (judgement.kind == Judgement::kRefusal) errors.push_back(judgement.message);
    if (judgement.kind == Judgement::kWarning) args.warnings.push_back(judgement.message);
  }
}

// After reading: parse errors stop here; then implied settings, judgements and checks. The
// arguments are the command line's (or stand for it, in a file): their problems are usage
// errors, all of them in one message.
TrainingArguments finish(TrainingArguments args, std::vector<std::string> errors) {
  if (!errors.empty()) fail_with_flag_problems(errors);
  apply_implied(args, errors);
  judge_other_arguments(args, errors);
  judge_report_to(args, errors);
  validate_training_arguments(args, errors);
  if (!errors.empty()) fail_with_flag_problems(errors);
  return args;
}

std::string read_arguments_file(const std::string& path) {
  require_readable_file(path, "the arguments file");
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in, "cannot read the arguments file " + path + ": check the path");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Rank 0 alone speaks for the job: N ranks do not print N copies.
void log_warnings(const TrainingArguments& args) {
  if (current_rank().rank != 0) return;
  for (const std::string& warning : args.warnings) ZT_LOG(kWarn, warning);
}

}  // namespace

std::optional<ArgumentsFileFormat> arguments_file_format(const std::string& token) {
  auto ends_with = [&](std::string_view tail) {
    return token.size() > tail.size() && token.compare(token.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (token.rfind("--", 0) == 0 || token.find('=') != std::string::npos) return std::nullopt;
  if (ends_with(".json")) return ArgumentsFileFormat::kJson;
  if (ends_with(".yaml") || ends_with(".yml")) return ArgumentsFileFormat::kYaml;
  return std::nullopt;
}

std::int64_t TrainingArguments::warmup_steps_for(std::int64_t total_steps) const {
  if (warmup_steps >= 1) return static_cast<std::int64_t>(warmup_steps);
  const double share = warmup_steps > 0 ? warmup_steps : warmup_ratio;
  return static_cast<std::int64_t>(std::ceil(share * static_cast<double>(total_steps)));
}

nlohmann::json parse_arguments_object(std::string_view text, ArgumentsFileFormat format, const std::string& source) {
  nlohmann::json object;
  if (format == ArgumentsFileFormat::kYaml) {
    object = parse_yaml(text, source);
  } else {
    // Deeper than any config needs: refused before anything walks it recursively.
    const auto bounded = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      ZT_REQUIRE(depth <= 64, source + " nests deeper than 64 levels");
      return true;
    };
    object = parse_json(text, source, bounded);
  }
  ZT_REQUIRE(object.is_object(), source + " must hold a " +
                                     (format == ArgumentsFileFormat::kYaml ? "map" : "JSON object") +
                                     " of argument names and values");
  return object;
}

nlohmann::json read_arguments_object(const std::string& path) {
  const std::optional<ArgumentsFileFormat> format = arguments_file_format(path);
  ZT_REQUIRE(format, path + " is no arguments file (.json, .yaml or .yml)");
  return parse_arguments_object(read_arguments_file(path), *format, path);
}

TrainingArguments parse_training_arguments_text(std::string_view text, ArgumentsFileFormat format,
                                                const std::string& source, const std::vector<std::string>& overrides) {
  const nlohmann::json object = parse_arguments_object(text, format, source);
  TrainingArguments args;
  std::vector<std::string> errors;
  ArgumentReader reader(args, errors);
  reader.read_object(object, source);
  reader.read_flags(overrides);
  return finish(std::move(args), std::move(errors));
}

TrainingArguments parse_training_arguments(const std::vector<std::string>& tokens) {
  TrainingArguments args;
  if (auto format = tokens.empty() ? std::nullopt : arguments_file_format(tokens[0])) {
    args = parse_training_arguments_text(read_arguments_file(tokens[0]), *format, tokens[0],
                                         std::vector<std::string>(tokens.begin() + 1, tokens.end()));
  } else {
    std::vector<std::string> errors;
    ArgumentReader(args, errors).read_flags(tokens);
    args = finish(std::move(args), std::move(errors));
  }
  log_warnings(args);
  return args;
}

std::string training_arguments_json(const TrainingArguments& args) {
  OrderedJson json;
  for (const ArgumentSpec& spec : argument_table()) json[spec.name] = argument_json(args, spec);
  for (const auto& [name, value] : args.other_arguments.items()) json[name] = value;
  return json.dump(2);
}

std::string training_arguments_help() { return flags_help(train_flag_table()); }

}  // namespace zt::train
