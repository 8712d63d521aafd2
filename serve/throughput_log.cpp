#include "serve/throughput_log.h"

#include <iomanip>
#include <sstream>

namespace zt::serve {
namespace {

double milliseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

std::optional<std::string> ThroughputLog::add(const StepFigures& step, Clock::time_point now) {
  if (sums_.steps == 0) since_ = now - step.took;  // an interval counts from its first step, not from idle time
  ++sums_.steps;
  sums_.step_time += step.took;
  if (step.prompt_tokens > 0) {
    ++sums_.prefill_steps;
    sums_.prefill_time += step.took;
  }
  sums_.prompt_tokens += step.prompt_tokens;
  sums_.generated_tokens += step.generated_tokens;
  last_ = step;
  if (now - since_ < interval_) return std::nullopt;
  return flush(now);
}

std::optional<std::string> ThroughputLog::flush(Clock::time_point now) {
  std::optional<std::string> text;
  if (sums_.steps > 0) text = line(now);
  sums_ = {};
  since_ = now;
  return text;
}

// "serve: 10.0 s: prompt 2100.0 tokens/s, generation 16736.0 tokens/s; 64 running, 0 waiting;
// 5120 steps of 1.95 ms mean, 40 of them with prompts (7.90 ms mean)"
std::string ThroughputLog::line(Clock::time_point now) const {
  const double seconds = std::chrono::duration<double>(now - since_).count();
  const double per_second = seconds > 0 ? 1.0 / seconds : 0.0;
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "serve: " << seconds << " s: prompt " << sums_.prompt_tokens * per_second
      << " tokens/s, generation " << sums_.generated_tokens * per_second << " tokens/s; " << last_.running
      << " running, " << last_.waiting << " waiting; " << sums_.steps << " steps of " << std::setprecision(2)
      << milliseconds(sums_.step_time) / sums_.steps << " ms mean, " << sums_.prefill_steps << " of them with prompts";
  if (sums_.prefill_steps > 0) out << " (" << milliseconds(sums_.prefill_time) / sums_.prefill_steps << " ms mean)";
  return out.str();
}

}  // namespace zt::serve
