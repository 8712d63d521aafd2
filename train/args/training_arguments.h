// The arguments of `zerotune train`: HF TrainingArguments' names and defaults, plus the data
// and fine-tuning-method flags, given as command-line flags or as one JSON file (the way
// HfArgumentParser reads `train.py args.json`).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "train/args/enum_names.h"
#include "train/data/sample_encoding.h"

namespace zt::train {

// When checkpoints are saved (--save_strategy) and the model evaluated (--eval_strategy):
// HF's IntervalStrategy.
enum class IntervalStrategy { kNo, kSteps, kEpoch };
constexpr std::array<EnumName<IntervalStrategy>, 3> enum_names(IntervalStrategy) {
  return {{{IntervalStrategy::kNo, "no"}, {IntervalStrategy::kSteps, "steps"}, {IntervalStrategy::kEpoch, "epoch"}}};
}

// What is trained (--finetuning_type): every parameter, some layers, LoRA matrices beside the
// frozen model, or a P-Tuning v2 prefix (train/finetuning.h).
enum class FinetuningType { kFull, kFreeze, kLora, kPtuning };
constexpr std::array<EnumName<FinetuningType>, 4> enum_names(FinetuningType) {
  return {{{FinetuningType::kFull, "full"},
           {FinetuningType::kFreeze, "freeze"},
           {FinetuningType::kLora, "lora"},
           {FinetuningType::kPtuning, "ptuning"}}};
}

// --overlong_samples names train/data/sample_encoding.h's Overlong.
constexpr std::array<EnumName<Overlong>, 2> enum_names(Overlong) {
  return {{{Overlong::kTruncate, "truncate"}, {Overlong::kSkip, "skip"}}};
}

// --padding: a micro-batch's samples back to back, or each padded to the longest of them.
enum class Padding { kNone, kLongest };
constexpr std::array<EnumName<Padding>, 2> enum_names(Padding) {
  return {{{Padding::kNone, "none"}, {Padding::kLongest, "longest"}}};
}

struct TrainingArguments {
  // Model and output.
  std::string model_name_or_path;
  std::string output_dir;
  bool overwrite_output_dir = false;
  std::string deepspeed;  // path of a ds_config.json, empty when none

  // Length of training and batches.
  double num_train_epochs = 3.0;
  std::int64_t max_steps = -1;  // > 0 overrides num_train_epochs
  std::int64_t per_device_train_batch_size = 8;
  std::int64_t per_device_eval_batch_size = 8;
  std::int64_t gradient_accumulation_steps = 1;

  // Optimizer and schedule.
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  std::string lr_scheduler_type = "linear";
  std::string lr_scheduler_kwargs;  // JSON object, e.g. {"min_lr_rate": 0.1}
  double warmup_ratio = 0.0;
  std::int64_t warmup_steps = 0;

  // Logging, saving, evaluating.
  std::int64_t logging_steps = 500;
  IntervalStrategy save_strategy = IntervalStrategy::kSteps;
  std::int64_t save_steps = 500;
  std::optional<std::int64_t> save_total_limit;
  bool save_only_model = false;
  IntervalStrategy eval_strategy = IntervalStrategy::kNo;
  std::optional<std::int64_t> eval_steps;  // defaults to logging_steps, as in HF
  std::string report_to = "none";

  // Precision, memory, data loading, reproducibility.
  bool bf16 = false;
  bool fp16 = false;
  bool gradient_checkpointing = false;
  std::int64_t dataloader_num_workers = 0;
  std::string resume_from_checkpoint;  // a checkpoint folder, or "true" for the latest one
  std::int64_t seed = 42;
  std::string device = "auto";         // auto | cpu | cuda | cuda:N
  std::string attn_impl = "zerotune";  // zerotune | cudnn

  // Data.
  std::string train_file;
  std::string validation_file;
  std::string template_name;  // --template; empty picks the model's own
  std::int64_t max_length = 1024;
  Overlong overlong_samples = Overlong::kTruncate;
  bool train_on_prompt = false;
  bool packing = false;
  Padding padding = Padding::kNone;

  // Fine-tuning method.
  FinetuningType finetuning_type = FinetuningType::kLora;
  std::int64_t freeze_trainable_layers = 2;
  std::string freeze_trainable_modules = "all";
  std::int64_t lora_rank = 8;
  std::optional<double> lora_alpha;  // defaults to 2 * lora_rank
  double lora_dropout = 0.0;
  std::string lora_target = "all";
  std::int64_t pre_seq_len = 16;
  bool prefix_projection = false;

  // Distributed.
  std::int64_t ddp_timeout = 1800;
  std::int64_t inprocess_ranks = 0;  // > 1: ranks as threads of one process (CPU or one shared GPU)
  bool zero_trace = false;  // every collective traced per rank (distributed/communicators/tracing_communicator.h)

  // The flags the user gave (names without dashes), for conflict checks and messages.
  std::set<std::string> given;

  bool was_given(const std::string& name) const { return given.count(name) != 0; }
  // Warmup steps as HF computes them: warmup_steps when > 0, else ceil(ratio * total).
  std::int64_t warmup_steps_for(std::int64_t total_steps) const;
};

// Parses `zerotune train`'s arguments: flags (`--name value`, `--name=value`, and for
// booleans `--name`, `--name true|false`), or a single `.json` file of the same names.
// Unknown flags, bad values and conflicting flags are errors that name them and say what is
// accepted; several problems are reported together.
TrainingArguments parse_training_arguments(const std::vector<std::string>& args);

// Every argument by its HF name, as a checkpoint's training_args.json records them.
std::string training_arguments_json(const TrainingArguments& args);

// One line per flag with its default, for `zerotune train --help`.
std::string training_arguments_help();

}  // namespace zt::train
