// The live progress line of a training run on a terminal: step/max_steps, percentage,
// elapsed time, ETA, speed and the last loss, redrawn in place with '\r'. Only drawn when
// stderr is a terminal (and by the caller's rank 0); otherwise the log lines are all there is.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace zt::train {

struct ProgressSnapshot {
  std::int64_t step = 0;
  std::int64_t max_steps = 0;
  std::int64_t steps_this_run = 0;  // a resumed run's speed counts only its own steps
  double elapsed_seconds = 0.0;
  std::optional<double> loss;
};

// " 42/100  42% [00:12<00:17, 3.51it/s, loss=2.3412]"; slower than a step a second it
// shows s/it.
std::string progress_line(const ProgressSnapshot& snapshot);

// "1:02:03" from hours up, "02:03" under an hour.
std::string format_duration(double seconds);

class ProgressBar {
 public:
  ProgressBar(std::int64_t first_step, std::int64_t max_steps, bool enabled);
  static bool stderr_is_terminal();

  void update(std::int64_t step, double loss);
  // Clears the line so that a log line can be printed; the next update redraws it.
  void clear();
  void finish();  // leaves the last line in place and moves to the next

 private:
  bool enabled_;
  bool drawn_ = false;
  std::int64_t first_step_;
  std::int64_t max_steps_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zt::train
