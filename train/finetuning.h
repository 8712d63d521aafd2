// Which parameters a fine-tuning method trains. full: all of them. freeze: the last N
// decoder layers (or the first N for a negative --freeze_trainable_layers), optionally only
// the named modules inside them (--freeze_trainable_modules mlp,self_attn), as
// ChatGLM-Finetuning and LLaMA-Factory freeze by layer name. lora: every base parameter is
// frozen and LoRA matrices are attached beside the --lora_target projections (models/peft/lora.h);
// they are what is trained. ptuning: every base parameter is frozen and a P-Tuning v2 prefix
// encoder (--pre_seq_len, --prefix_projection; models/peft/prefix_encoder.h), initialised from
// --seed, is attached; its parameters are what is trained. Parameters not trained have
// requires_grad turned off so backward neither computes nor stores their gradients.
#pragma once

#include <string>
#include <vector>

#include "models/model.h"
#include "models/peft/lora.h"
#include "models/peft/prefix_encoder.h"
#include "train/args/training_arguments.h"
#include "train/optim/optimizer.h"

namespace zt::train {

std::vector<TrainableParameter> select_trainable(models::CausalLM& model, const TrainingArguments& args);

// The LoRA of --lora_rank, --lora_alpha (default 2 * rank), --lora_dropout and --lora_target.
models::LoraConfig lora_config(const TrainingArguments& args, const models::ModelConfig& config);

// The prefix of --pre_seq_len and --prefix_projection, with ChatGLM's dropout.
models::PrefixConfig prefix_config(const TrainingArguments& args);

// The method in a few words for the start line ("LoRA rank 8, alpha 16, on all linear
// modules"); when --finetuning_type was not given, that LoRA is the default and how to train
// every parameter instead.
std::string finetuning_description(const TrainingArguments& args);

// "trainable params: 4,399,104 || all params: 498,431,872 || trainable%: 0.8826", as PEFT's
// print_trainable_parameters reports it; all params count what the method adds to the model.
std::string trainable_summary(const models::CausalLM& model, const std::vector<TrainableParameter>& trainable);

}  // namespace zt::train
