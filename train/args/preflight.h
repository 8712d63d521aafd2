// Everything about a `zerotune train` run that can be checked before the model loads, checked
// before it loads, so that a mistyped path or a broken file stops the run in seconds, whatever
// the model's size (and even when its weights are missing or damaged): the output folder
// (output_dir_check.h), the checkpoint to resume, the DeepSpeed config's JSON, and the data,
// every file found, read and parsed (dataset_selection.h). The arguments themselves, the
// --template name included, were checked when they were parsed.
#pragma once

#include "train/args/dataset_selection.h"
#include "train/args/training_arguments.h"

namespace zt::train {

// Throws zt::Error naming the flag, the path and what to do. Returns the data it read, so
// that the run reads it once.
SelectedData check_before_loading(const TrainingArguments& args);

}  // namespace zt::train
