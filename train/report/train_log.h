// output_dir/train_log.jsonl: every log_history entry (training, evaluation, the final
// summary) as one JSON line, appended and flushed as the run goes, so that a run killed at
// any point leaves every line it logged.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace zt::train {

class TrainLogFile {
 public:
  // Starts the file with `earlier`: nothing for a fresh run; for a resumed one, the log_history
  // of the checkpoint it resumes, so the file and trainer_state.json list the same entries
  // (the first run's later lines, its closing summary among them, are what the resumed run
  // logs again or never reached; a line cut short by a kill goes too).
  TrainLogFile(const std::string& output_dir, const nlohmann::json& earlier);

  void append(const nlohmann::json& entry);

  static constexpr const char* kFileName = "train_log.jsonl";

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace zt::train
