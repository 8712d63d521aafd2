// `zerotune train`: HF Trainer + DeepSpeed's fine-tuning, flag for flag (train/).
#include <iostream>

#include "cli/command.h"
#include "train/training_job.h"

namespace zt::cli {
namespace {

int run_train(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: zerotune train --model_name_or_path DIR --output_dir DIR --train_file FILE [options]\n"
                 "       zerotune train args.json|args.yaml [--name value | name=value ...]\n\n"
                 "HF TrainingArguments' names (and a DeepSpeed config through --deepspeed), plus the data and\n"
                 "method flags; an arguments file (HfArgumentParser's JSON or YAML, LLaMA-Factory's YAML) may be\n"
                 "followed by flags that override it. Booleans take --flag, --flag true or --flag false. The options\n"
                 "by section, with the values a flag is limited to {a,b} and its [default]:\n\n"
              << train::training_arguments_help();
    return 0;
  }
  // Stopped by a signal between steps: the shell's status for that signal (130 for Ctrl-C).
  const int stopped_by = train::run_training_job(train::parse_training_arguments(args));
  return stopped_by == 0 ? 0 : 128 + stopped_by;
}

const Registration registration{{"train", "fine-tune a model (HF Trainer + DeepSpeed flags and files)", run_train}};

}  // namespace
}  // namespace zt::cli
