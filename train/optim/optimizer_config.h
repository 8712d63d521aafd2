// The optimizer's hyperparameters: what AdamW takes besides the learning rate of each step
// (train/optim/lr_scheduler.h gives that). Filled from the flags (train/args/training_plan.cpp)
// or from a DeepSpeed config's optimizer block (train/deepspeed/deepspeed_optimizer.cpp), and
// read by every optimizer engine's step (train/optim/adamw_step_core.h).
#pragma once

namespace zt::train {

struct OptimizerConfig {
  // The block's own learning rate: the peak of a DeepSpeed scheduler that takes it from the
  // optimizer (LrScheduleConfig::peak_lr_from_optimizer); the step is given its rate.
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = true;  // AdamW; DeepSpeed's "Adam" with adam_w_mode false is L2
};

}  // namespace zt::train
