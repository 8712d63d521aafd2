// `zerotune train`: HF Trainer + DeepSpeed's fine-tuning, flag for flag (train/). Its flags are
// train's table (train/args/argument_table.h), in the grammar every command reads and writes
// --help with.
#include <iostream>

#include "cli/command.h"
#include "train/args/argument_table.h"
#include "train/training_job.h"

namespace zt::cli {
namespace {

int run_train(const std::vector<std::string>& args) {
  if (asks_for_help(args)) {
    std::cout << train::training_arguments_help();
    return 0;
  }
  // Stopped by a signal between steps: the shell's status for that signal (130 for Ctrl-C).
  const int stopped_by = train::run_training_job(train::parse_training_arguments(args));
  return stopped_by == 0 ? 0 : 128 + stopped_by;
}

const Registration registration{{"train", "fine-tune a model (HF Trainer + DeepSpeed flags and files)", run_train,
                                 [] { return train::train_flag_table(); }}};

}  // namespace
}  // namespace zt::cli
