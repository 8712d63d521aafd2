// Everything the training loop needs to know, resolved once from the flags and the optional
// DeepSpeed config: batch geometry, length of training, precision, optimizer, schedule,
// clipping and the loss scaler. Where both name a value, they have already been checked to
// agree (train/deepspeed/deepspeed_config.h); the DeepSpeed blocks win where only they say something.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "train/args/training_arguments.h"
#include "train/deepspeed/deepspeed_config.h"
#include "train/report/tensorboard_destination.h"

namespace zt::train {

enum class Precision { kFloat32, kBFloat16, kFloat16 };

struct TrainingPlan {
  std::int64_t micro_batch = 1;
  std::int64_t accumulation = 1;
  int world_size = 1;
  std::int64_t steps_per_epoch = 1;  // optimizer steps
  std::int64_t max_steps = 1;
  double num_train_epochs = 1.0;
  Precision precision = Precision::kFloat32;
  OptimizerConfig optimizer;
  LrScheduleConfig schedule;  // its peak_lr is the plan's one learning rate
  double max_grad_norm = 0.0;
  std::optional<LossScalerConfig> loss_scaler;  // fp16 only
  ZeroConfig zero;
  // --offload_delayed_update: the offloaded update lands one step late (OffloadOptions).
  bool offload_delayed_update = false;
  // Every how many steps the loop logs, evaluates and saves (the arguments' shares of the
  // steps resolved against max_steps, as HF does).
  std::int64_t logging_steps = 500;
  std::int64_t eval_steps = 500;
  std::int64_t save_steps = 500;
  // When the loop logs, evaluates and saves besides those intervals: HF's strategies and switches.
  IntervalStrategy logging_strategy = IntervalStrategy::kSteps;
  bool logging_first_step = false;
  IntervalStrategy eval_strategy = IntervalStrategy::kNo;
  double eval_delay = 0.0;  // steps, or epochs under eval_strategy epoch, before the first evaluation
  bool eval_on_start = false;
  bool eval_at_end = false;           // --do_eval
  std::int64_t eval_micro_batch = 8;  // --per_device_eval_batch_size
  IntervalStrategy save_strategy = IntervalStrategy::kSteps;
  std::optional<std::int64_t> save_total_limit;
  bool save_optimizer = true;         // false under --save_only_model
  bool saves_only_trainable = false;  // LoRA and P-Tuning write only the parameters they train
  // How each epoch deals the data (train/data/batching.h).
  std::uint64_t data_order_seed = 42;  // --data_seed, else --seed
  std::int64_t max_length = 1024;
  bool packing = false;
  // What the run reads and writes.
  std::string output_dir;
  std::string resume_from_checkpoint;  // a checkpoint folder, "true" for output_dir's latest; empty: none
  bool max_steps_given = false;        // --max_steps set the length, not --num_train_epochs
  std::string arguments_json;          // training_args.json, saved with every checkpoint
  TensorBoardRequest tensorboard;      // the flags' and the DeepSpeed config's tensorboard folders
  bool progress_bar = true;            // on a terminal, unless --disable_tqdm
  std::int64_t profile_steps = 0;      // > 0: that many steps timed per op family
  bool wall_clock_breakdown = false;   // DeepSpeed's per-phase step times
  std::vector<std::string> warnings;

  DType working_dtype() const;
};

// One rank's data-loader length for a micro-batch size (the DeepSpeed config may settle the
// micro-batch, inferring it from train_batch_size).
using MicroBatchCounter = std::function<std::int64_t(std::int64_t micro_batch)>;

// Fills and types `deepspeed`, --deepspeed's config as check_before_loading read it (none
// without the flag). A micro-batch or accumulation that the config infers differently from a
// flag the user gave is an error.
TrainingPlan plan_training(const TrainingArguments& args, const std::optional<DeepSpeedInput>& deepspeed,
                           const MicroBatchCounter& count_micro_batches, int world_size = 1,
                           std::int64_t hidden_size = 0);
// The same, reading --deepspeed's config first: for a caller that holds only the arguments.
TrainingPlan plan_training(const TrainingArguments& args, const MicroBatchCounter& count_micro_batches,
                           int world_size = 1, std::int64_t hidden_size = 0);

// The engine that runs a plan's optimizer steps: the single-device optimizer
// (train/optim/optimizer.h), or ZeRO over the ranks of a communicator, stages 0-2
// (train/zero/zero_optimizer.h) or stage 3 (train/zero/zero3_optimizer.h).
enum class EngineKind { kSingleDevice, kZero, kZero3 };

struct EngineChoice {
  EngineKind kind = EngineKind::kSingleDevice;
  int zero_stage = 0;  // the stage the engine partitions at; 0 for the single-device optimizer
  bool needs_ranks() const { return kind != EngineKind::kSingleDevice; }
};

// The one decision of which engine runs, asked by train/training_job.cpp (which starts the
// ranks it needs) and the Trainer (which builds it). `has_ranks`: the run has a communicator
// (several ranks, or a launcher's single GPU rank); ZeRO then runs at the plan's stage.
// Without one the single-device optimizer runs, except under stage 3 with parameter offload:
// that runs ZeRO-3 over one in-process rank whose shard, the whole model, is held in host
// memory, since the single-device optimizer keeps the weights on the device (docs/ZERO.md).
EngineChoice choose_engine(const TrainingPlan& plan, bool has_ranks);

// AdamW's hyperparameters as the flags give them (--adam_beta1, --adam_beta2, --adam_epsilon,
// --weight_decay); --learning_rate is the schedule's peak.
OptimizerConfig optimizer_from_flags(const TrainingArguments& args);

// What HF Trainer fills a DeepSpeed config's "auto" from: the flags' values and the run's shape.
AutoFillContext deepspeed_auto_context(const TrainingArguments& args, int world_size, std::int64_t hidden_size,
                                       std::int64_t total_steps, std::int64_t warmup_steps);

const char* precision_name(Precision precision);

}  // namespace zt::train
