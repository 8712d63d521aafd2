// `zerotune estimate FILE [flags]`: the memory of the run `zerotune train FILE` would start. The
// file (a LLaMA-Factory YAML, an HF TrainingArguments JSON) and the training flags after it are
// read by train's own reader, so its defaults are train's (LLaMA-Factory's files train LoRA
// unless they say otherwise; a training script's names imply their method, docs/TRAINING.md),
// and the settings the estimate counts are taken from the result: the model, the method and its
// LoRA rank and targets, the 4-bit base, the micro-batch, the length, recomputation, the
// DeepSpeed config and the dtype. The estimate's own flags (the GPUs, nodes and memory to fit)
// may follow the file too.
#pragma once

#include <string>
#include <vector>

#include "runtime/flags/flag_table.h"

namespace zt::cli {

// Whether `args` start with an arguments file.
bool starts_with_training_file(const std::vector<std::string>& args);

// The estimate's command line for the run `args` (a file, then flags) describe: the settings
// train reads from them, as the estimate's flags, then the estimate's own flags as given.
std::vector<std::string> estimate_words_of_training_file(const std::vector<std::string>& args,
                                                         const FlagTable& estimate_table);

}  // namespace zt::cli
