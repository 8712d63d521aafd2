// `zerotune train` from parsed arguments to a trained model in output_dir: device and rank
// from the environment, the model, tokenizer and chat template from the model folder, the
// data encoded, the trainable parameters chosen, the plan resolved (with the DeepSpeed
// config), and the Trainer run — on one device, on N in-process ranks, or as one rank of
// a job started by zerotune launch / torchrun / mpirun / srun.
#pragma once

#include "train/args/training_arguments.h"

namespace zt::train {

// Returns 0 when training ran to the end, or the stop signal (SIGINT, SIGTERM) that ended it
// between steps (train/trainer.h).
int run_training_job(const TrainingArguments& args);

}  // namespace zt::train
