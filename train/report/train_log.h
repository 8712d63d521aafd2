// output_dir/train_log.jsonl: every log_history entry (training, evaluation, the final
// summary) as one JSON line, appended and flushed as the run goes, so that a run killed at
// any point leaves every line it logged.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace zt::train {

class TrainLogFile {
 public:
  // A fresh run (resumed_step empty) starts the file anew. A run resumed at step S keeps the
  // earlier run's lines up to S and drops the later ones, which it is about to log again,
  // along with a line cut short by a kill.
  TrainLogFile(const std::string& output_dir, std::optional<std::int64_t> resumed_step);

  void append(const nlohmann::json& entry);

  static constexpr const char* kFileName = "train_log.jsonl";

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace zt::train
