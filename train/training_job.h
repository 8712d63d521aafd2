// `zerotune train` from parsed arguments to a trained model in output_dir: device and rank
// from the environment, the model, tokenizer and chat template from the model folder, the
// data encoded, the trainable parameters chosen, the plan resolved (with the DeepSpeed
// config), and the Trainer run — on one device, on N in-process ranks, or as one rank of
// a job started by zerotune launch / torchrun / mpirun / srun.
#pragma once

#include <string>

#include "train/args/training_arguments.h"

namespace zt::train {

// Returns 0 when training ran to the end, or the stop signal (SIGINT, SIGTERM) that ended it
// between steps (train/trainer.h).
int run_training_job(const TrainingArguments& args);

// The arguments with what only the model's files tell: run_clm.py's block size (its default, or
// the given one capped at the tokenizer's model_max_length) as the sample length. `model_dir`
// is the local model folder. zerotune estimate sizes a run_clm-style file's run by it too.
TrainingArguments resolved_arguments(const TrainingArguments& given, const std::string& model_dir);

}  // namespace zt::train
