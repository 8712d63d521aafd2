// The checks HF's TrainingArguments.__post_init__ and the method flags need: required
// arguments, ranges, and flags that contradict each other or the chosen method.
#include <nlohmann/json.hpp>
#include <regex>

#include "train/args/argument_table.h"

namespace zt::train {
namespace {

void require(bool ok, std::vector<std::string>& errors, const std::string& message) {
  if (!ok) errors.push_back(message);
}

// Method flags that mean nothing for other methods: giving one is a contradiction.
void check_method_flags(const TrainingArguments& args, std::vector<std::string>& errors) {
  static const std::vector<std::pair<FinetuningType, std::vector<std::string>>> owned = {
      {FinetuningType::kFreeze, {"freeze_trainable_layers", "freeze_trainable_modules"}},
      {FinetuningType::kLora, {"lora_rank", "lora_alpha", "lora_dropout", "lora_target"}},
      {FinetuningType::kPtuning, {"pre_seq_len", "prefix_projection"}},
  };
  for (const auto& [method, flags] : owned) {
    if (args.finetuning_type == method) continue;
    for (const std::string& flag : flags)
      require(!args.was_given(flag), errors,
              "--" + flag + " applies to --finetuning_type " + name_of(method) + " only, but the type is " +
                  name_of(args.finetuning_type));
  }
}

void check_ranges(const TrainingArguments& args, std::vector<std::string>& errors) {
  require(args.per_device_train_batch_size > 0, errors, "--per_device_train_batch_size must be > 0");
  require(args.per_device_eval_batch_size > 0, errors, "--per_device_eval_batch_size must be > 0");
  require(args.gradient_accumulation_steps > 0, errors, "--gradient_accumulation_steps must be > 0");
  require(args.max_steps > 0 || args.num_train_epochs > 0, errors,
          "nothing to train: --max_steps <= 0 and --num_train_epochs <= 0");
  require(args.learning_rate >= 0, errors, "--learning_rate must be >= 0");
  require(args.weight_decay >= 0, errors, "--weight_decay must be >= 0");
  require(args.adam_beta1 >= 0 && args.adam_beta1 < 1, errors, "--adam_beta1 must be in [0, 1)");
  require(args.adam_beta2 >= 0 && args.adam_beta2 < 1, errors, "--adam_beta2 must be in [0, 1)");
  require(args.adam_epsilon > 0, errors, "--adam_epsilon must be > 0");
  require(args.max_grad_norm >= 0, errors, "--max_grad_norm must be >= 0 (0 disables clipping)");
  require(args.warmup_ratio >= 0 && args.warmup_ratio <= 1, errors, "--warmup_ratio must be in [0, 1]");
  require(args.warmup_steps >= 0, errors, "--warmup_steps must be >= 0");
  require(args.logging_steps > 0, errors, "--logging_steps must be > 0");
  require(args.save_strategy != IntervalStrategy::kSteps || args.save_steps > 0, errors,
          "--save_steps must be > 0 with --save_strategy steps");
  require(!args.save_total_limit || *args.save_total_limit > 0, errors, "--save_total_limit must be > 0");
  require(!args.eval_steps || *args.eval_steps > 0, errors, "--eval_steps must be > 0");
  require(args.dataloader_num_workers >= 0, errors, "--dataloader_num_workers must be >= 0");
  require(args.max_length > 1, errors, "--max_length must be > 1");
  require(args.freeze_trainable_layers != 0, errors,
          "--freeze_trainable_layers must not be 0 (positive: the last N layers; negative: the first N)");
  require(args.lora_rank > 0, errors, "--lora_rank must be > 0");
  require(!args.lora_alpha || *args.lora_alpha > 0, errors, "--lora_alpha must be > 0");
  require(args.lora_dropout >= 0 && args.lora_dropout < 1, errors, "--lora_dropout must be in [0, 1)");
  require(args.pre_seq_len > 0, errors, "--pre_seq_len must be > 0");
  require(args.ddp_timeout > 0, errors, "--ddp_timeout must be > 0 seconds");
  require(args.inprocess_ranks >= 0, errors, "--inprocess_ranks must be >= 0");
}

void check_combinations(const TrainingArguments& args, std::vector<std::string>& errors) {
  require(!(args.bf16 && args.fp16), errors, "--bf16 and --fp16 both given: choose one");
  require(!(args.packing && args.padding == Padding::kLongest), errors,
          "--packing and --padding longest both given: packed rows hold several samples and are never padded; "
          "choose one");
  require(args.eval_strategy == IntervalStrategy::kNo || !args.validation_file.empty(), errors,
          std::string("--eval_strategy ") + name_of(args.eval_strategy) + " needs --validation_file");
  require(!(args.save_only_model && !args.resume_from_checkpoint.empty()), errors,
          "--save_only_model checkpoints cannot be resumed from; drop --resume_from_checkpoint or --save_only_model");
  static const std::regex device("auto|cpu|cuda|cuda:[0-9]+");
  require(std::regex_match(args.device, device), errors,
          "--device '" + args.device + "' is not accepted; use auto, cpu, cuda or cuda:N");
  if (!args.lr_scheduler_kwargs.empty()) {
    nlohmann::json kwargs = nlohmann::json::parse(args.lr_scheduler_kwargs, nullptr, false);
    require(kwargs.is_object(), errors,
            "--lr_scheduler_kwargs must be a JSON object, got '" + args.lr_scheduler_kwargs + "'");
  }
}

}  // namespace

void validate_training_arguments(const TrainingArguments& args, std::vector<std::string>& errors) {
  for (const char* name : {"model_name_or_path", "output_dir", "train_file"})
    require(args.was_given(name), errors, std::string("--") + name + " is required");
  check_ranges(args, errors);
  check_combinations(args, errors);
  check_method_flags(args, errors);
}

}  // namespace zt::train
