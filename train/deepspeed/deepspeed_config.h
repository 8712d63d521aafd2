// A DeepSpeed config read as DeepSpeed reads it, after HF Trainer's "auto" filling: the batch
// triple inferred and checked, the optimizer, scheduler, fp16/bf16 and zero_optimization
// blocks typed and validated with DeepSpeed's defaults, ranges and alternative names, and one
// warning for every key that asks for something zerotune does not do (a key left at
// DeepSpeed's default or switched off asks for nothing and is not warned about).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/optim/loss_scaler.h"
#include "train/optim/lr_scheduler.h"
#include "train/optim/optimizer_config.h"
#include "train/zero/zero_config.h"

namespace zt::train {

// The optimizer block: AdamW's settings, and the block's own learning rate, the peak of a
// scheduler block that takes it from the optimizer (HF fills its "auto" from --learning_rate).
struct DeepSpeedOptimizer : OptimizerConfig {
  double lr = 1e-3;
};

struct DeepSpeedConfig {
  std::string source;  // the config's name in messages: its path, or where it was given
  std::int64_t train_batch_size = 0;
  std::int64_t micro_batch_per_gpu = 0;
  std::int64_t gradient_accumulation_steps = 0;
  std::vector<std::string> inferred;  // which of the batch triple DeepSpeed's rules filled in
  double gradient_clipping = 0.0;
  std::optional<DeepSpeedOptimizer> optimizer;  // absent: the Trainer's AdamW from the flags
  std::optional<LrScheduleConfig> scheduler;    // absent: --lr_scheduler_type
  bool fp16 = false;
  LossScalerConfig loss_scaler;
  bool bf16 = false;
  // Whether both blocks set "enabled" (as written, or an "auto" HF filled from the flags):
  // both disabled then means float32, where an absent block leaves the precision to the flags.
  bool precision_set = false;
  ZeroConfig zero;
  std::optional<std::int64_t> steps_per_print;
  bool wall_clock_breakdown = false;  // per-phase step times in the log (train/report/wall_clock_breakdown.h)
  std::vector<std::string> warnings;
};

// What the Trainer knows when it fills "auto": the values of the flags HF fills it from
// (train/args/training_plan.h reads them from the arguments), the data-parallel size, the
// model's hidden size, and the schedule's length.
struct AutoFillContext {
  std::int64_t per_device_train_batch_size = 1;
  std::int64_t gradient_accumulation_steps = 1;
  double max_grad_norm = 0.0;
  double learning_rate = 1e-3;  // --learning_rate
  OptimizerConfig optimizer{};  // --adam_beta1, --adam_beta2, --adam_epsilon, --weight_decay
  bool fp16 = false;
  bool bf16 = false;
  int world_size = 1;
  std::int64_t hidden_size = 0;
  std::int64_t total_steps = 0;
  std::int64_t warmup_steps = 0;
  // false: every "auto" takes its value, and a set value is not compared with the flags
  // (for a reading without flags: parse_deepspeed_without_flags).
  bool compare_with_flags = true;
};

// HF's trainer_config_process + trainer_config_finalize on `ds` in place: every "auto" gets
// its flag's value; a set value that differs from its flag is collected, and all of them
// are reported in one error suggesting "auto".
void fill_hf_auto(nlohmann::json& ds, const AutoFillContext& context, const std::string& source);

// Types and validates a filled config (`source` names the config in messages).
DeepSpeedConfig parse_deepspeed_config(const nlohmann::json& ds, int world_size, const std::string& source);

// The JSON text of a config (a key given twice in one object is an error, as DeepSpeed
// makes it), filled and parsed. Throws only zt::Error, whatever the text.
DeepSpeedConfig parse_deepspeed_text(std::string_view json_text, const AutoFillContext& context,
                                     const std::string& source);

// A config read as `zerotune train` reads it but without the training flags (what `zerotune
// estimate --deepspeed` has): every key judged the same way (the same warnings, and the same
// error for a key zerotune refuses), each "auto" HF Trainer fills from a flag given a value of
// its shape, and the ZeRO sizes that follow the model filled from `hidden_size` as HF fills
// them. Values HF compares with its flags are checked by `train`. The flags the estimate has
// fill what HF fills from theirs: an "auto" or absent micro-batch is `flags.micro_batch`
// (per_device_train_batch_size), an "auto" fp16 or bf16 "enabled" `flags.fp16` or `flags.bf16`
// (the estimate's --dtype). Except where the config sets train_batch_size and leaves the
// micro-batch out: then DeepSpeed's batch rules give it, train_batch_size /
// (gradient_accumulation_steps, 1 unless set to a number: the estimate has no flag to fill an
// "auto" one) / `flags.world_size`, as `zerotune train` derives it (a --micro_batch that differs
// is then the caller's error). Otherwise train_batch_size and gradient_accumulation_steps are
// left out (they do not change memory).
struct EstimateFlags {
  std::int64_t micro_batch = 1;
  bool micro_batch_given = false;
  int world_size = 1;
  bool fp16 = false;
  bool bf16 = false;
};
DeepSpeedConfig parse_deepspeed_without_flags(nlohmann::json ds, std::int64_t hidden_size, const std::string& source,
                                              EstimateFlags flags = {});

// --deepspeed's config as written, read once before anything is filled or typed: its JSON
// object and how messages name it (its path, or "the deepspeed config in the arguments").
struct DeepSpeedInput {
  nlohmann::json json;
  std::string source;
};

// --deepspeed's value: the path of a ds_config.json, or (starting with '{' after white space,
// as HF's TrainingArguments takes a dict) the config itself. What can be checked before the
// Trainer knows the data and the model is checked here: a file that is missing or not valid
// JSON, a key given twice.
DeepSpeedInput read_deepspeed_input(const std::string& path_or_json);

// The config read once, filled ("auto") from `context` and typed.
DeepSpeedConfig load_deepspeed_config(const DeepSpeedInput& input, const AutoFillContext& context);

}  // namespace zt::train
