// Which parameters a fine-tuning method trains. full: all of them. freeze: the last N
// decoder layers (or the first N for a negative --freeze_trainable_layers), optionally only
// the named modules inside them (--freeze_trainable_modules mlp,self_attn), as
// ChatGLM-Finetuning and LLaMA-Factory freeze by layer name. Parameters not trained have
// requires_grad turned off so backward neither computes nor stores their gradients.
#pragma once

#include <vector>

#include "models/model.h"
#include "train/optimizer.h"
#include "train/training_arguments.h"

namespace zt::train {

std::vector<TrainableParameter> select_trainable(const models::CausalLM& model, const TrainingArguments& args);

}  // namespace zt::train
