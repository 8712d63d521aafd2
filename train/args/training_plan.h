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
  LrScheduleConfig schedule;
  double max_grad_norm = 0.0;
  std::optional<LossScalerConfig> loss_scaler;  // fp16 only
  ZeroConfig zero;
  // Every how many steps the loop logs, evaluates and saves (the arguments' shares of the
  // steps resolved against max_steps, as HF does).
  std::int64_t logging_steps = 500;
  std::int64_t eval_steps = 500;
  std::int64_t save_steps = 500;
  bool wall_clock_breakdown = false;  // DeepSpeed's per-phase step times
  // The folder of the config's enabled `tensorboard` block (train/report/tensorboard_destination.h).
  std::optional<std::string> deepspeed_tensorboard;
  std::vector<std::string> warnings;

  DType working_dtype() const;
};

// One rank's data-loader length for a micro-batch size (the DeepSpeed config may settle the
// micro-batch, inferring it from train_batch_size).
using MicroBatchCounter = std::function<std::int64_t(std::int64_t micro_batch)>;

// Reads and fills the DeepSpeed config when --deepspeed is given. A micro-batch or
// accumulation that the config infers differently from a flag the user gave is an error.
TrainingPlan plan_training(const TrainingArguments& args, const MicroBatchCounter& count_micro_batches,
                           int world_size = 1, std::int64_t hidden_size = 0);

// AdamW's hyperparameters as the flags give them (--learning_rate, --adam_beta1, --adam_beta2,
// --adam_epsilon, --weight_decay).
OptimizerConfig optimizer_from_flags(const TrainingArguments& args);

// What HF Trainer fills a DeepSpeed config's "auto" from: the flags' values and the run's shape.
AutoFillContext deepspeed_auto_context(const TrainingArguments& args, int world_size, std::int64_t hidden_size,
                                       std::int64_t total_steps, std::int64_t warmup_steps);

const char* precision_name(Precision precision);

}  // namespace zt::train
