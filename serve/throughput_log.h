// The engine loop's figures, logged every interval while the server works, as vLLM's engine
// logs them: prompt and generation tokens/s over the interval, the requests running and
// waiting, and what the steps cost (how many, their mean time, and how many also prefilled
// prompts: those forwards run eagerly, the decode-only ones replay the decode kernel or its
// graphs). They say from the server's side whether a slow client or the engine sets the pace.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace zt::serve {

struct StepFigures {
  std::chrono::steady_clock::duration took{};
  std::int64_t prompt_tokens = 0;     // prefilled by the step
  std::int64_t generated_tokens = 0;  // one per sequence the step advanced
  std::size_t running = 0;            // after the step
  std::size_t waiting = 0;
};

class ThroughputLog {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ThroughputLog(Clock::duration interval = std::chrono::seconds(10), Clock::time_point start = Clock::now())
      : interval_(interval), since_(start) {}

  // Adds a step that ended at `now`; the line to log once `interval` has passed since the first
  // step after the last line (time spent idle between lines is not counted).
  std::optional<std::string> add(const StepFigures& step, Clock::time_point now);
  // The line for the steps added since the last one, if any (the loop is going idle).
  std::optional<std::string> flush(Clock::time_point now);

 private:
  struct Sums {
    std::int64_t steps = 0, prefill_steps = 0, prompt_tokens = 0, generated_tokens = 0;
    Clock::duration step_time{}, prefill_time{};
  };
  std::string line(Clock::time_point now) const;

  Clock::duration interval_;
  Clock::time_point since_;
  Sums sums_;
  StepFigures last_;
};

}  // namespace zt::serve
