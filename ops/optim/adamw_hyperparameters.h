// AdamW's hyperparameters besides the learning rate, declared once: the step reads them
// (adamw.h's AdamWConfig, cpu_adam.h), and a run's optimizer settings are these
// (train/optim/optimizer_config.h), from the flags or a DeepSpeed optimizer block. Header only,
// with no include, so the config readers need not see tensors.
#pragma once

namespace zt::ops {

struct AdamWHyperparameters {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

}  // namespace zt::ops
