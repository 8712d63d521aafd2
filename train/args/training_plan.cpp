#include "train/args/training_plan.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <tuple>

#include "runtime/error.h"
#include "runtime/usage_error.h"
#include "train/args/lr_scheduler_kwargs.h"
#include "train/args/report_to.h"

namespace zt::train {
namespace {

// HF: optimizer steps per epoch round a partial accumulation window up.
std::int64_t steps_per_epoch(std::int64_t micro_batches, std::int64_t accumulation) {
  return std::max<std::int64_t>(1, (micro_batches + accumulation - 1) / accumulation);
}

// HF's "constant" and "reduce_lr_on_plateau" schedules ignore warm-up without a word; a user who
// asked for warm-up steps is told, once. Then what the schedule's options and phases mean
// (`kwargs_notes`: options without effect).
void warn_about_schedule(TrainingPlan& plan, const std::vector<std::string>& kwargs_notes) {
  const ScheduleKind kind = plan.schedule.kind;
  if ((kind == ScheduleKind::kConstant || kind == ScheduleKind::kReduceOnPlateau) && plan.schedule.warmup_steps > 0)
    plan.warnings.push_back(
        "--warmup_steps/--warmup_ratio ask for " + std::to_string(plan.schedule.warmup_steps) +
        " warm-up steps, but --lr_scheduler_type " +
        (kind == ScheduleKind::kConstant
             ? "constant has no warm-up (as in HF): the rate is constant from step 1; use --lr_scheduler_type "
               "constant_with_warmup to warm up"
             : "reduce_lr_on_plateau has no warm-up (as in HF): the rate starts at --learning_rate"));
  plan.warnings.insert(plan.warnings.end(), kwargs_notes.begin(), kwargs_notes.end());
  for (const std::string& warning : lr_schedule_warnings(plan.schedule)) plan.warnings.push_back(warning);
}

LrScheduleConfig hf_schedule(const TrainingArguments& args, std::int64_t total, std::int64_t warmup,
                             std::vector<std::string>& warnings) {
  LrScheduleConfig schedule;
  schedule.kind = hf_schedule_kind(args.lr_scheduler_type);
  schedule.peak_lr = args.learning_rate;
  schedule.total_steps = total;
  schedule.warmup_steps = warmup;
  std::vector<std::string> errors;  // none: validate_training_arguments read the same options
  read_lr_scheduler_kwargs(nlohmann::json::parse(args.lr_scheduler_kwargs.empty() ? "{}" : args.lr_scheduler_kwargs),
                           args.learning_rate, schedule, errors, warnings);
  ZT_REQUIRE(errors.empty(), errors.empty() ? "" : errors.front());
  return schedule;
}

// HF: an interval below 1 is a share of max_steps, rounded up.
std::int64_t interval_steps(double value, std::int64_t max_steps) {
  if (value >= 1) return static_cast<std::int64_t>(value);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(value * static_cast<double>(max_steps))));
}

void resolve_intervals(TrainingPlan& plan, const TrainingArguments& args) {
  plan.logging_steps = interval_steps(args.logging_steps, plan.max_steps);
  plan.eval_steps = interval_steps(args.eval_steps.value_or(args.logging_steps), plan.max_steps);
  plan.save_steps = interval_steps(args.save_steps, plan.max_steps);
}

// What the loop reads of the flags besides the steps' arithmetic, copied once into the plan.
void resolve_loop(TrainingPlan& plan, const TrainingArguments& args) {
  plan.logging_strategy = args.logging_strategy;
  plan.logging_first_step = args.logging_first_step;
  plan.eval_strategy = args.eval_strategy;
  plan.eval_delay = args.eval_delay;
  plan.eval_on_start = args.eval_on_start;
  plan.eval_at_end = args.do_eval;
  plan.eval_micro_batch = args.per_device_eval_batch_size;
  plan.save_strategy = args.save_strategy;
  plan.save_total_limit = args.save_total_limit;
  plan.save_optimizer = !args.save_only_model;
  plan.saves_only_trainable =
      args.finetuning_type == FinetuningType::kLora || args.finetuning_type == FinetuningType::kPtuning;
  plan.data_order_seed = args.data_order_seed();
  plan.max_length = args.max_length;
  plan.packing = args.packing;
  plan.output_dir = args.output_dir;
  plan.resume_from_checkpoint = args.resume_from_checkpoint;
  plan.max_steps_given = args.max_steps > 0;
  plan.arguments_json = training_arguments_json(args);
  plan.tensorboard = tensorboard_request(args, std::nullopt);
  plan.progress_bar = !args.disable_tqdm.value_or(false);
  plan.profile_steps = args.profile_steps;
}

// The delayed update hands the whole partition to the CPU Adam (offload_optimizer's own reader
// has checked its stage).
void check_delayed_update(const TrainingPlan& plan) {
  if (!plan.offload_delayed_update) return;
  ZT_REQUIRE_USAGE(plan.zero.offload_optimizer,
                   "--offload_delayed_update delays optimizer offload's update, but the DeepSpeed config offloads "
                   "no optimizer: add zero_optimization.offload_optimizer {\"device\": \"cpu\"}");
  ZT_REQUIRE_USAGE(plan.zero.offload_ratio >= 1.0,
                   "--offload_delayed_update delays the CPU Adam of the whole partition, but offload_optimizer.ratio "
                   "is " +
                       std::to_string(plan.zero.offload_ratio) + ": remove the ratio, or drop the flag");
}

}  // namespace

DType TrainingPlan::working_dtype() const {
  switch (precision) {
    case Precision::kBFloat16:
      return DType::kBF16;
    case Precision::kFloat16:
      return DType::kF16;
    default:
      return DType::kF32;
  }
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kBFloat16:
      return "bf16";
    case Precision::kFloat16:
      return "fp16";
    default:
      return "fp32";
  }
}

OptimizerConfig optimizer_from_flags(const TrainingArguments& args) {
  OptimizerConfig optimizer;
  optimizer.beta1 = args.adam_beta1;
  optimizer.beta2 = args.adam_beta2;
  optimizer.eps = args.adam_epsilon;
  optimizer.weight_decay = args.weight_decay;
  return optimizer;
}

AutoFillContext deepspeed_auto_context(const TrainingArguments& args, int world_size, std::int64_t hidden_size,
                                       std::int64_t total_steps, std::int64_t warmup_steps) {
  return {.per_device_train_batch_size = args.per_device_train_batch_size,
          .gradient_accumulation_steps = args.gradient_accumulation_steps,
          .max_grad_norm = args.max_grad_norm,
          .learning_rate = args.learning_rate,
          .optimizer = optimizer_from_flags(args),
          .fp16 = args.fp16,
          .bf16 = args.bf16,
          .world_size = world_size,
          .hidden_size = hidden_size,
          .total_steps = total_steps,
          .warmup_steps = warmup_steps};
}

TrainingPlan plan_training(const TrainingArguments& args, const MicroBatchCounter& count_micro_batches, int world_size,
                           std::int64_t hidden_size) {
  std::optional<DeepSpeedInput> deepspeed;
  if (!args.deepspeed.empty()) deepspeed = read_deepspeed_input(args.deepspeed);
  return plan_training(args, deepspeed, count_micro_batches, world_size, hidden_size);
}

EngineChoice choose_engine(const TrainingPlan& plan, bool has_ranks) {
  const bool zero3 = plan.zero.stage == 3;
  if (!has_ranks && !(zero3 && plan.zero.offload_param)) return {};
  return {.kind = zero3 ? EngineKind::kZero3 : EngineKind::kZero, .zero_stage = plan.zero.stage};
}

TrainingPlan plan_training(const TrainingArguments& args, const std::optional<DeepSpeedInput>& deepspeed,
                           const MicroBatchCounter& count_micro_batches, int world_size, std::int64_t hidden_size) {
  const std::int64_t micro_batches_per_epoch = count_micro_batches(args.per_device_train_batch_size);
  ZT_REQUIRE(micro_batches_per_epoch > 0, "the training data gives no batch: check --train_file and --max_length");
  TrainingPlan plan;
  plan.world_size = world_size;
  plan.micro_batch = args.per_device_train_batch_size;
  plan.accumulation = args.gradient_accumulation_steps;
  plan.steps_per_epoch = steps_per_epoch(micro_batches_per_epoch, plan.accumulation);
  plan.max_steps = args.max_steps > 0
                       ? args.max_steps
                       : static_cast<std::int64_t>(std::ceil(args.num_train_epochs * plan.steps_per_epoch));
  plan.num_train_epochs = args.max_steps > 0 ? std::ceil(static_cast<double>(plan.max_steps) / plan.steps_per_epoch)
                                             : args.num_train_epochs;
  const std::int64_t warmup = args.warmup_steps_for(plan.max_steps);
  plan.precision = args.bf16 ? Precision::kBFloat16 : args.fp16 ? Precision::kFloat16 : Precision::kFloat32;
  plan.optimizer = optimizer_from_flags(args);
  std::vector<std::string> kwargs_notes;
  plan.schedule = hf_schedule(args, plan.max_steps, warmup, kwargs_notes);
  plan.max_grad_norm = args.max_grad_norm;
  if (plan.precision == Precision::kFloat16) plan.loss_scaler = LossScalerConfig{};
  resolve_intervals(plan, args);
  resolve_loop(plan, args);
  ZT_REQUIRE_USAGE(!args.offload_delayed_update || deepspeed,
                   "--offload_delayed_update delays optimizer offload's update: add --deepspeed with "
                   "zero_optimization.offload_optimizer {\"device\": \"cpu\"}");
  if (!deepspeed) {
    warn_about_schedule(plan, kwargs_notes);
    return plan;
  }

  DeepSpeedConfig ds =
      load_deepspeed_config(*deepspeed, deepspeed_auto_context(args, world_size, hidden_size, plan.max_steps, warmup));
  for (auto [flag, flag_value, ds_value] :
       {std::tuple{"per_device_train_batch_size", args.per_device_train_batch_size, ds.micro_batch_per_gpu},
        std::tuple{"gradient_accumulation_steps", args.gradient_accumulation_steps, ds.gradient_accumulation_steps}})
    ZT_REQUIRE_USAGE(!args.was_given(flag) || flag_value == ds_value,
                     ds.source + ": the batch rules give " +
                         (std::string(flag) == "per_device_train_batch_size" ? "train_micro_batch_size_per_gpu "
                                                                             : "gradient_accumulation_steps ") +
                         std::to_string(ds_value) + " but --" + flag + " is " + std::to_string(flag_value) +
                         "; set it to \"auto\" in the config or change the flag");
  if (ds.micro_batch_per_gpu != plan.micro_batch || ds.gradient_accumulation_steps != plan.accumulation) {
    plan.micro_batch = ds.micro_batch_per_gpu;
    plan.accumulation = ds.gradient_accumulation_steps;
    plan.steps_per_epoch = steps_per_epoch(count_micro_batches(plan.micro_batch), plan.accumulation);
    if (args.max_steps <= 0)
      plan.max_steps = static_cast<std::int64_t>(std::ceil(args.num_train_epochs * plan.steps_per_epoch));
    kwargs_notes.clear();
    plan.schedule = hf_schedule(args, plan.max_steps, args.warmup_steps_for(plan.max_steps), kwargs_notes);
  }
  plan.max_grad_norm = ds.gradient_clipping;
  if (ds.optimizer) plan.optimizer = *ds.optimizer;
  if (ds.scheduler) {
    kwargs_notes.clear();  // the config's scheduler replaces --lr_scheduler_type
    plan.schedule = *ds.scheduler;
    if (plan.schedule.peak_lr_from_optimizer)
      plan.schedule.peak_lr = ds.optimizer ? ds.optimizer->lr : args.learning_rate;
  }
  if (ds.fp16 || ds.bf16) plan.precision = ds.fp16 ? Precision::kFloat16 : Precision::kBFloat16;
  plan.loss_scaler.reset();
  if (ds.fp16) plan.loss_scaler = ds.loss_scaler;
  plan.zero = ds.zero;
  // Without fp16/bf16 blocks the flags choose the precision, which the config reader did not know.
  if (plan.zero.grad_accum_dtype) {
    const std::string conflict = grad_accum_dtype_conflict(*plan.zero.grad_accum_dtype, plan.working_dtype());
    ZT_REQUIRE_USAGE(conflict.empty(), ds.source + ": " + conflict);
  }
  plan.offload_delayed_update = args.offload_delayed_update;
  check_delayed_update(plan);
  plan.wall_clock_breakdown = ds.wall_clock_breakdown;
  plan.tensorboard.deepspeed_folder = deepspeed_tensorboard_folder(deepspeed->json, ds.source);
  plan.warnings = ds.warnings;
  // HF Trainer builds DeepSpeed's scheduler when the config has one and drops its own without a
  // word; a schedule the user asked for by name should not vanish silently.
  if (ds.scheduler)
    for (const char* flag : {"lr_scheduler_type", "lr_scheduler_kwargs"})
      if (args.was_given(flag))
        plan.warnings.push_back(ds.source +
                                ": its \"scheduler\" block sets the learning-rate schedule, as under HF "
                                "Trainer, so --" +
                                flag + " is not used; remove the block to schedule by --" + flag);
  warn_about_schedule(plan, kwargs_notes);
  resolve_intervals(plan, args);
  return plan;
}

}  // namespace zt::train
