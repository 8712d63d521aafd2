// What the tests of training arguments share: the flags every run takes, an arguments file read
// as YAML, and a list of messages joined for a failure message.
#pragma once

#include <string>
#include <vector>

#include "tests/common/op_test_util.h"
#include "train/args/training_arguments.h"

namespace zt::testing {

// A model, an output folder and training data (none of them read), then `extra`.
inline std::vector<std::string> minimal_flags(const std::vector<std::string>& extra) {
  std::vector<std::string> all = {"--model_name_or_path", "m", "--output_dir", "out", "--train_file", "d.json"};
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

inline train::TrainingArguments parse_minimal(const std::vector<std::string>& extra) {
  return train::parse_training_arguments(minimal_flags(extra));
}

// `text` read as the file args.yaml (then `overrides`, flags given after the file), and what
// reading it refuses with.
inline train::TrainingArguments yaml(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return train::parse_training_arguments_text(text, train::ArgumentsFileFormat::kYaml, "args.yaml", overrides);
}

inline std::string yaml_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return error_of([&] { yaml(text, overrides); });
}

// Each line followed by a newline.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text.append(line).append("\n");
  return text;
}

}  // namespace zt::testing
