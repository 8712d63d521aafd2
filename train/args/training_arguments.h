// The arguments of `zerotune train`: HF TrainingArguments' names and defaults, plus the data
// and fine-tuning-method flags and LLaMA-Factory's names for them, given as command-line flags
// or as one JSON or YAML file (the way HfArgumentParser reads `train.py args.json` and
// LLaMA-Factory `llamafactory-cli train args.yaml`).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/enum_names.h"
#include "train/data/sample_encoding.h"
#include "train/finetuning_type.h"

namespace zt::train {

// When checkpoints are saved (--save_strategy) and the model evaluated (--eval_strategy):
// HF's IntervalStrategy.
enum class IntervalStrategy { kNo, kSteps, kEpoch };
inline constexpr EnumName<IntervalStrategy> kIntervalStrategyNames[] = {
    {IntervalStrategy::kNo, "no"}, {IntervalStrategy::kSteps, "steps"}, {IntervalStrategy::kEpoch, "epoch"}};
constexpr const auto& enum_names(IntervalStrategy) { return kIntervalStrategyNames; }

// --finetuning_type names train/finetuning_type.h's FinetuningType.

// --overlong_samples names train/data/sample_encoding.h's Overlong.
inline constexpr EnumName<Overlong> kOverlongNames[] = {{Overlong::kTruncate, "truncate"}, {Overlong::kSkip, "skip"}};
constexpr const auto& enum_names(Overlong) { return kOverlongNames; }

// --padding: a micro-batch's samples back to back, or each padded to the longest of them.
enum class Padding { kNone, kLongest };
inline constexpr EnumName<Padding> kPaddingNames[] = {{Padding::kNone, "none"}, {Padding::kLongest, "longest"}};
constexpr const auto& enum_names(Padding) { return kPaddingNames; }

struct TrainingArguments {
  // Model and output.
  std::string model_name_or_path;       // a local folder, or a hub id resolved through models/hub/
  std::string model_revision = "main";  // the hub id's branch, tag or commit
  std::string output_dir;
  bool overwrite_output_dir = false;
  // A ds_config.json path, or the config itself as JSON text (HF takes a dict in a file, or
  // '{...}' as a flag); empty: none.
  std::string deepspeed;
  // ZeRO-Offload's delayed parameter update (DPU) under the config's offload_optimizer.
  bool offload_delayed_update = false;
  std::string run_name;  // empty: output_dir, as HF names a run

  // What the run does: zerotune train always trains; do_eval adds an evaluation at the end.
  bool do_train = true;
  bool do_eval = false;

  // Length of training and batches.
  double num_train_epochs = 3.0;
  std::int64_t max_steps = -1;  // > 0 overrides num_train_epochs
  std::int64_t per_device_train_batch_size = 8;
  std::int64_t per_device_eval_batch_size = 8;
  std::int64_t gradient_accumulation_steps = 1;

  // Optimizer and schedule.
  std::string optim = "adamw_torch";  // HF's names for the AdamW zerotune runs
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  std::string lr_scheduler_type = "linear";
  std::string lr_scheduler_kwargs;  // JSON object, e.g. {"min_lr_rate": 0.1}
  double warmup_ratio = 0.0;
  double warmup_steps = 0;  // >= 1: steps; in (0, 1): a share of the steps (transformers 5)

  // Logging, saving, evaluating. A *_steps value in (0, 1) is a share of max_steps, as in HF.
  IntervalStrategy logging_strategy = IntervalStrategy::kSteps;
  double logging_steps = 500;
  bool logging_first_step = false;
  std::optional<bool> disable_tqdm;  // true: no progress bar even on a terminal
  IntervalStrategy save_strategy = IntervalStrategy::kSteps;
  double save_steps = 500;
  std::optional<std::int64_t> save_total_limit;
  bool save_only_model = false;
  IntervalStrategy eval_strategy = IntervalStrategy::kNo;
  std::optional<double> eval_steps;  // defaults to logging_steps, as in HF
  double eval_delay = 0;             // steps (or epochs with eval_strategy epoch) before the first evaluation
  bool eval_on_start = false;
  // HF's integrations by name (train/args/report_to.h): tensorboard, or all, writes TensorBoard
  // event files into logging_dir; several names are separated by commas.
  std::string report_to = "none";
  std::string logging_dir;  // empty: HF's default (train/report/tensorboard_destination.h)

  // Precision, memory, data loading, reproducibility.
  bool bf16 = false;
  bool fp16 = false;
  std::optional<bool> tf32;  // TF32 tensor-op math for float32 GEMMs on the GPU
  bool gradient_checkpointing = false;
  std::int64_t dataloader_num_workers = 0;
  std::string resume_from_checkpoint;  // a checkpoint folder, or "true" for the latest one
  std::int64_t seed = 42;
  std::optional<std::int64_t> data_seed;  // the data order's seed; defaults to seed
  // Bitwise repeatable GPU runs (models::ModelOptions::deterministic_attention); everything
  // else is seeded from seed or deterministic already.
  bool full_determinism = false;
  std::string device = "auto";         // auto | cpu | cuda | cuda:N
  bool use_cpu = false;                // HF's way to say --device cpu
  std::string attn_impl = "zerotune";  // zerotune | cudnn
  std::int64_t profile_steps = 0;      // > 0: time that many steps per op family (runtime/profile/)

  // Data.
  std::string train_file;  // a file, or several separated by commas
  std::string validation_file;
  std::string template_name;  // --template; empty picks the model's own
  // LLaMA-Factory's: false renders a reasoning template (qwen3) without thinking; null keeps the
  // data's thinking but prompts with the empty thought (text/chat_template/chat_template.h).
  std::optional<bool> enable_thinking = true;
  std::int64_t max_length = 1024;
  Overlong overlong_samples = Overlong::kTruncate;
  bool train_on_prompt = false;
  bool packing = false;
  Padding padding = Padding::kNone;
  std::optional<std::int64_t> max_samples;  // of each data file, its first N
  // ChatGLM's P-Tuning main.py (its DataTrainingArguments): the record keys of the prompt, the
  // answer and the earlier turns ([[prompt, answer], ...]), read as a LLaMA-Factory entry's
  // columns prompt, response and history; and the prompt's and answer's token caps (main.py's
  // defaults 1024 and 128 for one left out), which give max_length = source + target + 1
  // (main.py's max_seq_length) where it is not given.
  std::string prompt_column, response_column, history_column;
  std::optional<std::int64_t> max_source_length, max_target_length;

  // transformers' run_clm.py (its DataTrainingArguments): plain texts tokenized, chained and cut
  // into blocks of block_size tokens (train/data/pretraining_blocks.h); see run_clm_style().
  std::optional<std::int64_t> block_size;                 // unset: run_clm's default from the model's files
  std::int64_t validation_split_percentage = 5;           // without --validation_file: the first N % evaluate
  bool keep_linebreaks = true;                            // .txt lines keep their "\n"
  std::optional<std::int64_t> max_train_samples;          // the first N training blocks
  std::optional<std::int64_t> max_eval_samples;           // the first N evaluation blocks
  std::optional<std::int64_t> preprocessing_num_workers;  // datasets' num_proc: shards and tokenizing threads
  std::int64_t preprocessing_batch_size = 1000;           // texts --stage pt chains at a time (datasets' batch_size)

  // LLaMA-Factory's names for the data and the run (train/args/dataset_selection.h).
  std::string stage = "sft";
  std::string dataset;  // names in dataset_dir/dataset_info.json, or files, separated by commas
  std::string dataset_dir = "data";
  std::string eval_dataset;
  double val_size = 0.0;  // < 1: that share of the training data evaluates; >= 1: that many samples
  bool neat_packing = false;
  bool disable_gradient_checkpointing = false;

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
  // Qwen's finetune.py: true trains LoRA, false every weight; unset: --finetuning_type decides.
  std::optional<bool> use_lora;
  // Why the method is not LoRA although no --finetuning_type was given (the run line says it):
  // the flag that implied it, or empty.
  std::string method_implied_by;

  // QLoRA (train/args/base_quantization.h): the frozen base linears in bitsandbytes' 4 bits.
  // LLaMA-Factory's names, and transformers' BitsAndBytesConfig's (whose defaults differ: fp4,
  // no double quantization; bnb_4bit_quant_type and bnb_4bit_use_double_quant are aliases).
  std::optional<std::int64_t> quantization_bit;
  std::string quantization_method = "bnb";
  std::string quantization_type;            // nf4 | fp4; empty: the default of the name that asked
  std::optional<bool> double_quantization;  // unset: the default of the name that asked
  bool load_in_4bit = false;
  bool load_in_8bit = false;
  std::string bnb_4bit_compute_dtype;  // empty: the training dtype
  std::string bnb_4bit_quant_storage = "uint8";
  bool q_lora = false;  // FastChat's train_lora.py and Qwen's finetune.py: quantization_bit 4

  // Preference training (--stage dpo, train/preference/): LLaMA-Factory's names; TRL's DPOConfig
  // names are aliases (beta, loss_type, label_smoothing) or these members (rpo_alpha, ...).
  double pref_beta = 0.1;
  std::string pref_loss = "sigmoid";  // sigmoid | hinge | ipo | kto_pair | orpo | simpo
  double pref_ftx = 0.0;
  double simpo_gamma = 0.5;
  double dpo_label_smoothing = 0.0;
  double pref_bco_weight = 0.0;  // BCO's share: only 0 is run
  std::optional<double> rpo_alpha;
  bool reference_free = false;
  bool precompute_ref_log_probs = false;

  // Distributed.
  std::int64_t ddp_timeout = 1800;
  std::int64_t inprocess_ranks = 0;  // > 1: ranks as threads of one process (CPU or one shared GPU)
  bool zero_trace = false;  // every collective traced per rank (distributed/communicators/tracing_communicator.h)

  // The flags the user gave (names without dashes), for conflict checks and messages.
  std::set<std::string> given;
  // Accepted names zerotune does not honour (other_arguments.h) with the values given (secrets
  // masked), and the warnings those values earn, each once.
  nlohmann::json other_arguments = nlohmann::json::object();
  std::vector<std::string> warnings;

  bool was_given(const std::string& name) const { return given.count(name) != 0; }
  // Warmup steps as HF computes them: warmup_steps when >= 1, ceil(warmup_steps * total) when
  // it is a share, else ceil(warmup_ratio * total).
  std::int64_t warmup_steps_for(std::int64_t total_steps) const;
  std::uint64_t data_order_seed() const { return static_cast<std::uint64_t>(data_seed.value_or(seed)); }
  // --deepspeed holds the config itself rather than a path: it starts with '{' (after white space).
  bool deepspeed_inline() const {
    const std::size_t first = deepspeed.find_first_not_of(" \t\r\n");
    return first != std::string::npos && deepspeed[first] == '{';
  }
  // A LLaMA-Factory arguments file: it names a stage or a dataset. Its defaults then apply
  // (cutoff_len 2048, gradient checkpointing on).
  bool llama_factory_style() const { return was_given("stage") || was_given("dataset"); }
  // A command with the LoRA names of FastChat's train_lora.py or Qwen's finetune.py (their
  // shared LoraArguments, and Qwen's use_lora). Their LoRA defaults then apply.
  // A run_clm.py command: it names one of run_clm's own data arguments, or a .csv data file
  // (which only run_clm reads). Its data is then run_clm's: texts chained into blocks.
  bool run_clm_style() const {
    for (const char* name :
         {"block_size", "validation_split_percentage", "keep_linebreaks", "max_train_samples", "max_eval_samples"})
      if (was_given(name)) return true;
    for (const std::string* file : {&train_file, &validation_file})
      if (file->size() > 4 && file->compare(file->size() - 4, 4, ".csv") == 0) return true;
    return false;
  }
  bool training_script_lora_style() const {
    for (const char* name : {"lora_r", "lora_target_modules", "lora_weight_path", "lora_bias", "q_lora", "use_lora"})
      if (was_given(name)) return true;
    return false;
  }
};

// Parses `zerotune train`'s arguments: flags (`--name value`, `--name=value`, `name=value`, and
// for booleans `--name`, `--name true|false`), or an arguments file (.json, .yaml or .yml, as
// HfArgumentParser and LLaMA-Factory read them) followed by any flags that override it.
// Unknown names, bad values and conflicting arguments are one zt::UsageError that names them
// and says what is accepted, all reported together; a file that cannot be read or parsed is a
// zt::Error. The warnings of accepted names without effect are
// logged once, by rank 0.
TrainingArguments parse_training_arguments(const std::vector<std::string>& args);

enum class ArgumentsFileFormat { kJson, kYaml };

// The format of an arguments file named `token` (.json, .yaml or .yml), or nullopt when the
// token is no such name (a flag, a `name=value` override, anything else).
std::optional<ArgumentsFileFormat> arguments_file_format(const std::string& token);

// An arguments file's text (`source` names it in messages) as its object of names and values,
// as every command reads one (train here; export, chat, generate, evaluate and serve through
// cli/arguments_file.h). Text that is not such an object is a zt::Error naming `source`.
nlohmann::json parse_arguments_object(std::string_view text, ArgumentsFileFormat format, const std::string& source);
// The object of the arguments file at `path`, whose format arguments_file_format gives.
nlohmann::json read_arguments_object(const std::string& path);

// The arguments of a file's text (`source` names it in messages) and the flags after it. Pure:
// reads no file and logs nothing (warnings are in the result), so it can be fuzzed.
TrainingArguments parse_training_arguments_text(std::string_view text, ArgumentsFileFormat format,
                                                const std::string& source,
                                                const std::vector<std::string>& overrides = {});

// Every argument by its HF name, as a checkpoint's training_args.json records them: inline
// dicts (deepspeed, lr_scheduler_kwargs) as objects, then the accepted names without a member.
std::string training_arguments_json(const TrainingArguments& args);

// One line per flag with its default, for `zerotune train --help`.
std::string training_arguments_help();

}  // namespace zt::train
