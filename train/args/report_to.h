// --report_to, HF's integrations by name, and --logging_dir. zerotune writes TensorBoard's event
// files itself (train/report/tensorboard_log.h): `tensorboard`, and `all`, which in HF means
// every integration installed, turn them on. Every other integration HF knows (wandb, mlflow,
// comet_ml, ...) is warned about by name, since the run goes on without it; a name HF does not
// know is an error, as HF makes it.
#pragma once

#include <string>
#include <vector>

#include "train/args/training_arguments.h"
#include "train/report/tensorboard_destination.h"

namespace zt::train {

// The integrations --report_to names (a list in a file, several words on the command line, or
// names separated by commas): empty for "none", {"tensorboard"} for "all".
std::vector<std::string> report_to_integrations(const std::string& value);

// Whether the run writes TensorBoard event files under --logging_dir.
bool reports_to_tensorboard(const TrainingArguments& args);

// What asks the run for event files: the flags, and the DeepSpeed config's folder (none without
// its enabled tensorboard block).
TensorBoardRequest tensorboard_request(const TrainingArguments& args, std::optional<std::string> deepspeed_folder);

// Appends an error for a name HF does not know, or "none" or "all" beside other names; adds one
// warning naming the integrations zerotune does not report to, and one for a --logging_dir
// that nothing reads.
void judge_report_to(TrainingArguments& args, std::vector<std::string>& errors);

}  // namespace zt::train
