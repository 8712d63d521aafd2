// Everything about a `zerotune train` run that can be checked before the model loads, checked
// before it loads, so that a mistyped path or a broken file stops the run in seconds, whatever
// the model's size (and even when its weights are missing or damaged): the output folder
// (output_dir_check.h), the checkpoint to resume, the DeepSpeed config's JSON, and the data,
// every file found, read and parsed (dataset_selection.h). The arguments themselves, the
// --template name included, were checked when they were parsed.
#pragma once

#include <optional>

#include "train/args/dataset_selection.h"
#include "train/args/training_arguments.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {

// What the checks read, so that the run reads each file once: the data, and the DeepSpeed
// config's JSON (none without --deepspeed), which plan_training fills and types.
struct CheckedInputs {
  SelectedData data;
  std::optional<DeepSpeedInput> deepspeed;
};

// Throws zt::Error naming the flag, the path and what to do.
CheckedInputs check_before_loading(const TrainingArguments& args);

}  // namespace zt::train
