// What a training run's output folder may not be, checked before anything loads: a file, a
// folder that cannot be written into (or created), occupied without --overwrite_output_dir (or
// --resume_from_checkpoint), or a place where the run's writes would replace something the
// user gave it: the model folder (or a folder inside it), the checkpoint being resumed (or
// inside it), or a data file that has the name of a file the run writes into output_dir or
// lies in one of its checkpoint-N folders.
#pragma once

#include "train/args/training_arguments.h"

namespace zt::train {

// Throws naming both paths and what to do: a zt::UsageError when the arguments are the problem
// (an occupied folder, one that is an input), a zt::Error when the disk is (a file in the way,
// no permission).
void check_output_dir(const TrainingArguments& args);

}  // namespace zt::train
