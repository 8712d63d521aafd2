// The checks HF's TrainingArguments.__post_init__, LLaMA-Factory's parser and the method flags
// need: required arguments, ranges, and flags that contradict each other or the chosen method.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "runtime/error.h"
#include "text/chat_template/chat_template.h"
#include "train/args/argument_table.h"
#include "train/args/base_quantization.h"
#include "train/args/lr_scheduler_kwargs.h"
#include "train/preference/preference_loss.h"

namespace zt::train {
namespace {

void require(bool ok, std::vector<std::string>& errors, const std::string& message) {
  if (!ok) errors.push_back(message);
}

// Method flags that mean nothing for other methods: giving one is a contradiction on a command
// line; in a LLaMA-Factory file, which ignores them (its examples are edited from one method to
// another, or switched with finetuning_type=full), a warning.
void check_method_flags(TrainingArguments& args, std::vector<std::string>& errors) {
  static const std::vector<std::pair<FinetuningType, std::vector<std::string>>> owned = {
      {FinetuningType::kFreeze, {"freeze_trainable_layers", "freeze_trainable_modules"}},
      {FinetuningType::kLora, {"lora_rank", "lora_alpha", "lora_dropout", "lora_target"}},
      {FinetuningType::kPtuning, {"pre_seq_len", "prefix_projection"}},
  };
  for (const auto& [method, flags] : owned) {
    if (args.finetuning_type == method) continue;
    for (const std::string& flag : flags) {
      if (!args.was_given(flag)) continue;
      const std::string message = "--" + flag + " applies to --finetuning_type " + name_of(method) +
                                  " only, but the type is " + name_of(args.finetuning_type);
      if (args.llama_factory_style())
        args.warnings.push_back(message + "; it has no effect (as in LLaMA-Factory)");
      else
        errors.push_back(message);
    }
  }
}

// HF's *_steps: > 0, and a whole number unless a share of the steps (< 1).
void check_steps(const char* flag, double value, std::vector<std::string>& errors) {
  require(value > 0, errors, std::string("--") + flag + " must be > 0");
  require(value < 1 || value == std::floor(value), errors,
          std::string("--") + flag + " must be a whole number when >= 1 (below 1 it is a share of the steps)");
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
  require(args.warmup_steps < 1 || args.warmup_steps == std::floor(args.warmup_steps), errors,
          "--warmup_steps must be a whole number when >= 1 (below 1 it is a share of the steps)");
  if (args.logging_strategy == IntervalStrategy::kSteps) check_steps("logging_steps", args.logging_steps, errors);
  if (args.save_strategy == IntervalStrategy::kSteps) check_steps("save_steps", args.save_steps, errors);
  if (args.eval_steps) check_steps("eval_steps", *args.eval_steps, errors);
  require(args.eval_strategy != IntervalStrategy::kSteps || args.eval_steps || args.logging_steps > 0, errors,
          "--eval_strategy steps needs --eval_steps, or --logging_steps > 0 for it to default to");
  require(args.eval_delay >= 0, errors, "--eval_delay must be >= 0");
  require(!args.save_total_limit || *args.save_total_limit > 0, errors, "--save_total_limit must be > 0");
  require(args.dataloader_num_workers >= 0, errors, "--dataloader_num_workers must be >= 0");
  require(args.max_length > 1, errors, "--max_length must be > 1");
  require(!args.max_samples || *args.max_samples > 0, errors, "--max_samples must be > 0");
  require(args.val_size >= 0, errors, "--val_size must be >= 0");
  require(args.val_size < 1 || args.val_size == std::floor(args.val_size), errors,
          "--val_size must be a share below 1 or a whole number of samples");
  require(args.freeze_trainable_layers != 0, errors,
          "--freeze_trainable_layers must not be 0 (positive: the last N layers; negative: the first N)");
  require(args.lora_rank > 0, errors, "--lora_rank must be > 0");
  require(!args.lora_alpha || *args.lora_alpha > 0, errors, "--lora_alpha must be > 0");
  require(args.lora_dropout >= 0 && args.lora_dropout < 1, errors, "--lora_dropout must be in [0, 1)");
  require(args.pre_seq_len > 0, errors, "--pre_seq_len must be > 0");
  require(args.ddp_timeout > 0, errors, "--ddp_timeout must be > 0 seconds");
  require(args.profile_steps >= 0, errors, "--profile_steps must be >= 0 (0: no profiling)");
  require(args.inprocess_ranks >= 0, errors, "--inprocess_ranks must be >= 0");
}

// Where the data comes from: HF's files or LLaMA-Factory's dataset names, one of each kind.
void check_data(const TrainingArguments& args, std::vector<std::string>& errors) {
  require(!args.train_file.empty() || !args.dataset.empty(), errors,
          "--train_file is required (or LLaMA-Factory's --dataset)");
  require(args.train_file.empty() || args.dataset.empty(), errors,
          "--train_file and --dataset both name the training data; give one");
  require(args.validation_file.empty() || args.eval_dataset.empty(), errors,
          "--validation_file and --eval_dataset both name the evaluation data; give one");
  // LLaMA-Factory's hub forms: REMOTE:<repo> downloads a dataset repository's dataset_info.json,
  // ONLINE takes every dataset name as a hub dataset.
  const bool remote = args.dataset_dir.rfind("REMOTE:", 0) == 0;
  require(!remote && args.dataset_dir != "ONLINE", errors,
          "--dataset_dir " + args.dataset_dir + " (LLaMA-Factory): " +
              (remote ? "a dataset list in a hub repository" : "datasets named by their hub ids") +
              " is not supported by zerotune, which reads local files: download the " +
              (remote ? "repository " + args.dataset_dir.substr(7) + " (its dataset_info.json and data files)"
                      : "datasets' files") +
              " and set --dataset_dir to that folder");
  // ChatGLM's main.py: the keys of --train_file's records.
  const bool columns = !args.prompt_column.empty() || !args.response_column.empty() || !args.history_column.empty();
  require(!columns || (!args.prompt_column.empty() && !args.response_column.empty()), errors,
          "--prompt_column and --response_column name the keys of a record's prompt and answer (ChatGLM's main.py): "
          "give both");
  require(!columns || (args.stage != "dpo" && !args.run_clm_style()), errors,
          "--prompt_column and --response_column name the keys of supervised records (ChatGLM's main.py); "
          "--stage dpo reads preference pairs and run_clm's options plain texts: drop them");
  require(!columns || args.dataset.empty(), errors,
          "--prompt_column and --response_column name the keys of --train_file's records; a --dataset entry names "
          "its own in dataset_info.json (\"columns\")");
  const bool named_eval = !args.validation_file.empty() || !args.eval_dataset.empty();
  require(!(named_eval && args.val_size > 0), errors,
          "--val_size splits evaluation data off the training data, but --validation_file or --eval_dataset "
          "already names it; give one");
  // run_clm splits the first validation_split_percentage % off the training texts without a validation file.
  const bool clm_split = args.run_clm_style() && args.validation_file.empty() && args.validation_split_percentage > 0;
  const bool has_eval = named_eval || args.val_size > 0 || clm_split;
  const std::string eval_data =
      std::string(" needs evaluation data: --validation_file (or --eval_dataset, or --val_size") +
      (args.run_clm_style() ? ", or run_clm's --validation_split_percentage above 0)" : ")");
  require(args.eval_strategy == IntervalStrategy::kNo || has_eval, errors,
          std::string("--eval_strategy ") + name_of(args.eval_strategy) + eval_data);
  // An eval strategy turns do_eval on (apply_implied): its own message says what is missing.
  require(!args.do_eval || has_eval || args.eval_strategy != IntervalStrategy::kNo, errors, "--do_eval" + eval_data);
  require(!args.eval_on_start || has_eval, errors, "--eval_on_start" + eval_data);
}

// run_clm.py's data options (TrainingArguments::run_clm_style): its blocks and split, and what
// they cannot be combined with.
void check_run_clm(const TrainingArguments& args, std::vector<std::string>& errors) {
  require(!args.block_size || *args.block_size > 0, errors, "--block_size must be > 0");
  require(args.validation_split_percentage >= 0 && args.validation_split_percentage < 100, errors,
          "--validation_split_percentage must be in [0, 100)");
  require(!args.max_train_samples || *args.max_train_samples > 0, errors, "--max_train_samples must be > 0");
  require(!args.max_eval_samples || *args.max_eval_samples > 0, errors, "--max_eval_samples must be > 0");
  require(!args.preprocessing_num_workers || *args.preprocessing_num_workers > 0, errors,
          "--preprocessing_num_workers must be > 0");
  require(args.preprocessing_batch_size > 0, errors, "--preprocessing_batch_size must be > 0");
  if (!args.run_clm_style()) return;
  const std::string clm =
      "run_clm.py's data options (--block_size, --validation_split_percentage, "
      "--keep_linebreaks, --max_train_samples, --max_eval_samples, a .csv file)";
  require(!args.llama_factory_style(), errors,
          clm +
              " cannot be combined with LLaMA-Factory's --stage or --dataset; its pre-training is --stage pt with "
              "cutoff_len as the block size");
  require(args.was_given("do_train") && args.do_train, errors,
          "run_clm.py trains only with --do_train (without it, --do_eval only evaluates): add --do_train; to "
          "evaluate a model without training it use `zerotune evaluate`");
  require(!args.packing, errors,
          "--packing with " + clm + ": run_clm's blocks are already --block_size tokens each; drop --packing");
  require(!(args.block_size && args.was_given("max_length")), errors,
          "--block_size and --max_length (or model_max_length) both set the sequence length; give one");
  require(args.val_size == 0, errors,
          "--val_size with " + clm + ": run_clm splits with --validation_split_percentage; give that instead");
}

// --lr_scheduler_type's options as transformers checks them, and reduce_lr_on_plateau's needs:
// evaluations during training (HF's __post_init__ requires an eval strategy) whose metric is the
// eval_loss zerotune computes.
void check_schedule(const TrainingArguments& args, std::vector<std::string>& errors) {
  const nlohmann::json kwargs =
      nlohmann::json::parse(args.lr_scheduler_kwargs.empty() ? "{}" : args.lr_scheduler_kwargs, nullptr, false);
  if (!kwargs.is_object())
    return errors.push_back("--lr_scheduler_kwargs must be a JSON object, got '" + args.lr_scheduler_kwargs + "'");
  LrScheduleConfig scratch;
  scratch.kind = hf_schedule_kind(args.lr_scheduler_type);  // one of the flag's choices
  std::vector<std::string> notes;                           // the training plan repeats them
  read_lr_scheduler_kwargs(kwargs, args.learning_rate, scratch, errors, notes);
  if (scratch.kind != ScheduleKind::kReduceOnPlateau) return;
  require(args.eval_strategy != IntervalStrategy::kNo, errors,
          "--lr_scheduler_type reduce_lr_on_plateau requires an eval strategy: it lowers the rate when eval_loss "
          "stops improving (--eval_strategy steps or epoch, with evaluation data)");
  const nlohmann::json metric = args.other_arguments.value("metric_for_best_model", nlohmann::json());
  require(metric.is_null() || metric == "loss" || metric == "eval_loss", errors,
          "--lr_scheduler_type reduce_lr_on_plateau steps on metric_for_best_model " + metric.dump() +
              ", but zerotune's evaluation computes eval_loss only; drop metric_for_best_model (it defaults to "
              "loss)");
}

// LLaMA-Factory's stages other than sft, pt and dpo train something else than a language model.
void check_stage(const TrainingArguments& args, std::vector<std::string>& errors) {
  static const std::vector<std::pair<std::string, std::string>> stages = {
      {"rm", "reward modelling"}, {"ppo", "PPO"}, {"kto", "KTO preference training"}};
  if (args.stage == "sft" || args.stage == "pt" || args.stage == "dpo") return;
  if (args.stage == "orpo") {  // LLaMA-Factory 0.7; 0.8 made ORPO a loss of stage dpo
    errors.push_back(
        "--stage orpo (LLaMA-Factory 0.7's ORPO stage) is not a stage of zerotune train: ORPO is --stage dpo with "
        "--pref_loss orpo, its weight orpo_beta given as --pref_beta, as LLaMA-Factory 0.8 and later write it");
    return;
  }
  std::string what = "an unknown stage";
  for (const auto& [name, description] : stages)
    if (args.stage == name) what = description;
  errors.push_back("--stage " + args.stage + " (" + what +
                   ") is not supported: zerotune train runs supervised fine-tuning (--stage sft), pre-training on "
                   "plain text (--stage pt) and preference training (--stage dpo)");
}

// LLaMA-Factory's workflows train only with do_train true; without it they evaluate (do_eval) or
// predict (do_predict: its examples/extras/nlg_eval file) and train nothing, so training on such a
// file would do what it did not ask for. A file that leaves do_train out and predicts nothing
// trains, as `--stage dpo` on the command line does; HF's Trainer.train() reads no do_train.
void check_llama_factory_training(const TrainingArguments& args, std::vector<std::string>& errors) {
  if (!args.llama_factory_style() || (args.was_given("do_train") && args.do_train)) return;
  const std::string instead =
      "; zerotune train trains: generate the answers to a dataset's prompts with `zerotune generate "
      "--model_name_or_path MODEL --adapter_name_or_path ADAPTER --input_file FILE --output_file OUT`, score its loss "
      "with `zerotune evaluate --validation_file FILE`, or set do_train true to train";
  if (args.other_arguments.value("do_predict", nlohmann::json(false)) == true)
    errors.push_back("--do_predict without --do_train: LLaMA-Factory then predicts with the model and trains nothing" +
                     instead);
  else if (args.was_given("do_train"))
    errors.push_back(
        "--do_train false with LLaMA-Factory's --stage or --dataset: LLaMA-Factory then trains nothing (it only "
        "evaluates with do_eval or predicts with do_predict)" +
        instead);
}

// --stage dpo's options (LLaMA-Factory's RLHFArguments, TRL's DPOConfig), as both check them.
void check_preference(const TrainingArguments& args, std::vector<std::string>& errors) {
  if (!preference_loss_from_name(args.pref_loss)) {
    static const std::vector<std::string> trl_only = {"robust",    "exo_pair", "nca_pair", "bco_pair",
                                                      "sppo_hard", "aot",      "aot_pair", "apo_zero",
                                                      "apo_down",  "discopop", "sft"};
    const bool trl = std::find(trl_only.begin(), trl_only.end(), args.pref_loss) != trl_only.end();
    errors.push_back("--pref_loss (TRL's loss_type) " + args.pref_loss + (trl ? " is TRL's, which" : ", which") +
                     " zerotune does not run: use sigmoid, hinge, ipo, kto_pair, orpo or simpo");
  }
  require(std::isfinite(args.pref_beta) && args.pref_beta > 0, errors, "--pref_beta (TRL's beta) must be > 0");
  require(args.dpo_label_smoothing >= 0 && args.dpo_label_smoothing <= 0.5, errors,
          "--dpo_label_smoothing (TRL's label_smoothing) must be in [0, 0.5]");
  require(std::isfinite(args.simpo_gamma), errors, "--simpo_gamma must be a number");
  require(args.pref_ftx >= 0, errors, "--pref_ftx must be >= 0");
  require(args.pref_bco_weight == 0, errors,
          "--pref_bco_weight " + std::to_string(args.pref_bco_weight) +
              ": BCO's share of the preference loss is not run (its running reward mean); use 0");
  require(!args.rpo_alpha || *args.rpo_alpha >= 0, errors, "--rpo_alpha must be >= 0");
  if (args.stage != "dpo") return;
  require(!args.packing, errors,
          "--packing with --stage dpo: a pair's chosen and rejected answers are scored as whole sequences and are "
          "never packed with other samples; drop --packing (and neat_packing)");
}

void check_combinations(const TrainingArguments& args, std::vector<std::string>& errors) {
  require(!(args.bf16 && args.fp16), errors, "--bf16 and --fp16 both given: choose one");
  require(!(args.packing && args.padding == Padding::kLongest), errors,
          "--packing and --padding longest both given: packed rows hold several samples and are never padded; "
          "choose one");
  require(!(args.save_only_model && !args.resume_from_checkpoint.empty()), errors,
          "--save_only_model checkpoints cannot be resumed from; drop --resume_from_checkpoint or --save_only_model");
  static const std::regex device("auto|cpu|cuda|cuda:[0-9]+");
  require(std::regex_match(args.device, device), errors,
          "--device '" + args.device + "' is not accepted; use auto, cpu, cuda or cuda:N");
  check_schedule(args, errors);
  if (args.deepspeed_inline()) {
    nlohmann::json ds = nlohmann::json::parse(args.deepspeed, nullptr, false);
    require(ds.is_object(), errors,
            "--deepspeed starts with '{' but is not a valid JSON object; give the config as an object, or a path");
  }
  const nlohmann::json& accelerator = args.other_arguments.value("accelerator_config", nlohmann::json());
  require(!(accelerator.is_object() && accelerator.contains("split_batches") && accelerator["split_batches"] == true),
          errors,
          "--accelerator_config split_batches true is not supported: it makes per_device_train_batch_size the size "
          "of the whole batch; zerotune's is per device (divide it by the number of ranks)");
  check_optimizer_name(args.optim, errors);
  if (!args.template_name.empty()) {
    try {  // the templates are text/'s to know; an unknown name is still the arguments' mistake
      models::make_chat_template(args.template_name);
    } catch (const Error& e) {
      errors.push_back(std::string("--template: ") + e.what());
    }
  }
}

}  // namespace

void validate_training_arguments(TrainingArguments& args, std::vector<std::string>& errors) {
  for (const char* name : {"model_name_or_path", "output_dir"})
    require(args.was_given(name), errors, std::string("--") + name + " is required");
  check_data(args, errors);
  check_run_clm(args, errors);
  check_ranges(args, errors);
  check_combinations(args, errors);
  check_stage(args, errors);
  check_llama_factory_training(args, errors);
  check_preference(args, errors);
  check_method_flags(args, errors);
  check_base_quantization(args, errors);
}

}  // namespace zt::train
