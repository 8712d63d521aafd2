// A run's log entries as TensorBoard events, as HF's TensorBoardCallback writes them: each
// entry's keys rewritten by its rewrite_logs (eval_loss -> eval/loss, test_* -> test/*, every
// other key -> train/<key>: train/loss, train/learning_rate, train/grad_norm, train/epoch,
// the summary's train/train_runtime, ...), each number a scalar at the entry's step (HF's
// state.global_step), text as a text summary; "step" itself is the events' step, not a tag.
// The run's arguments go first, as the text "args" at step 0, as on_train_begin writes them.
// One event file per folder (tensorboard_destination.h), each record flushed as it is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/report/event_file_writer.h"

namespace zt::train {

// HF's rewrite_logs for one key.
std::string tensorboard_tag(const std::string& key);

class TensorBoardLog {
 public:
  // Opens a new event file in each folder and writes `arguments_json` as the "args" text. A
  // run resumed at step S also writes SessionLog START at S + 1, so that TensorBoard drops
  // what an earlier run wrote into the same folder past the checkpoint, as train_log.jsonl
  // drops those lines.
  TensorBoardLog(const std::vector<std::string>& folders, const std::string& arguments_json,
                 std::optional<std::int64_t> resumed_step);

  // One log entry (its "step" is the events' step): one event of its scalars, and one per text.
  void append(const nlohmann::json& entry);

  std::vector<std::string> paths() const;

 private:
  void write(const std::string& event);

  std::vector<EventFileWriter> files_;
};

}  // namespace zt::train
