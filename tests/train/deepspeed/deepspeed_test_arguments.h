// The training arguments the DeepSpeed config tests start from: micro-batch 4, accumulation 2,
// learning rate 2e-5, plus `extra`.
#pragma once

#include <string>
#include <vector>

#include "train/args/training_arguments.h"

namespace zt::train {

inline TrainingArguments deepspeed_test_arguments(const std::vector<std::string>& extra) {
  std::vector<std::string> all = {"--model_name_or_path",
                                  "m",
                                  "--output_dir",
                                  "o",
                                  "--train_file",
                                  "t",
                                  "--per_device_train_batch_size",
                                  "4",
                                  "--gradient_accumulation_steps",
                                  "2",
                                  "--learning_rate",
                                  "2e-5"};
  all.insert(all.end(), extra.begin(), extra.end());
  return parse_training_arguments(all);
}

}  // namespace zt::train
