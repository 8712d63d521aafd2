// What the DeepSpeed config tests share: the training arguments they start from (micro-batch 4,
// accumulation 2, learning rate 2e-5, plus `extra`), a config read alone or around one block,
// and its warnings.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/op_test_util.h"
#include "train/args/training_arguments.h"
#include "train/args/training_plan.h"
#include "train/deepspeed/deepspeed_config.h"

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

// `text` read as ds.json at world size 1, without training flags to fill its "auto" values.
inline DeepSpeedConfig parsed_deepspeed(const std::string& text) {
  return parse_deepspeed_config(nlohmann::json::parse(text), 1, "ds.json");
}

// A ds.json of train_batch_size 8 and `block` under `key` ("scheduler", "zero_optimization"),
// read as parsed_deepspeed reads it; and what reading it refuses with.
inline DeepSpeedConfig with_block(const std::string& key, const std::string& block) {
  return parsed_deepspeed(
      std::string(R"({"train_batch_size": 8, ")").append(key).append("\": ").append(block).append("}"));
}

inline std::string block_error(const std::string& key, const std::string& block) {
  return testing::error_of([&] { with_block(key, block); });
}

inline bool has_warning(const DeepSpeedConfig& config, const std::string& part) {
  for (const std::string& w : config.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// Every warning, a line each, for a failure message.
inline std::string all_warnings(const DeepSpeedConfig& config) {
  std::string out;
  for (const std::string& w : config.warnings) out += w + "\n";
  return out;
}

}  // namespace zt::train
