// The optimizer's settings: AdamW's hyperparameters besides the learning rate (declared once,
// in ops/optim/adamw_hyperparameters.h, for the step too) and the kind of weight decay. The rate of
// each step is the schedule's (train/optim/lr_scheduler.h), the plan's one home for it. Filled
// from the flags (train/args/training_plan.cpp) or from a DeepSpeed config's optimizer block
// (train/deepspeed/deepspeed_optimizer.cpp), and read by every optimizer engine's step
// (train/optim/adamw_step_core.h).
#pragma once

#include "ops/optim/adamw_hyperparameters.h"

namespace zt::train {

struct OptimizerConfig : ops::AdamWHyperparameters {
  bool decoupled_weight_decay = true;  // AdamW; DeepSpeed's "Adam" with adam_w_mode false is L2
  // HF Trainer's AdamW leaves biases and norm weights undecayed (decays() in optimizer.h); a
  // DeepSpeed optimizer block is handed every trainable parameter as one group (transformers'
  // deepspeed_init), so its weight decay reaches them too.
  bool decays_every_parameter = false;
};

}  // namespace zt::train
