// Reading back what a training run logged: the entries of an output folder's train_log.jsonl,
// and one logged value across the entries that carry it, there or in the run's log history.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/checkpoint/trainer_state.h"
#include "train/report/train_log.h"

namespace zt::testing {

// One JSON object a line, in the order they were logged.
inline std::vector<nlohmann::json> train_log_entries(const std::filesystem::path& output_dir) {
  std::vector<nlohmann::json> entries;
  std::ifstream in(output_dir / train::TrainLogFile::kFileName);
  for (std::string line; std::getline(in, line);) entries.push_back(nlohmann::json::parse(line));
  return entries;
}

// `key` of every entry that has it ("loss", "eval_loss", ...).
inline std::vector<double> logged_values(const std::filesystem::path& output_dir, const std::string& key) {
  std::vector<double> values;
  for (const nlohmann::json& entry : train_log_entries(output_dir))
    if (entry.contains(key)) values.push_back(entry[key].get<double>());
  return values;
}

// `key` of every entry of a run's log history that has it ("loss", "skipped_steps", ...).
inline std::vector<double> logged_values(const train::TrainerState& state, const std::string& key) {
  std::vector<double> values;
  for (const nlohmann::json& entry : state.log_history)
    if (entry.contains(key)) values.push_back(entry[key].get<double>());
  return values;
}

}  // namespace zt::testing
