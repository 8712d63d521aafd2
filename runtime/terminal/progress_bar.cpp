#include "runtime/terminal/progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace zt::train {
namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

}  // namespace

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(std::max(0.0, std::round(seconds)));
  char text[48];
  if (total >= 3600)
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof(text), "%02lld:%02lld", total / 60, total % 60);
  return text;
}

std::string progress_line(const ProgressSnapshot& s) {
  const double fraction = s.max_steps > 0 ? static_cast<double>(s.step) / static_cast<double>(s.max_steps) : 1.0;
  std::string line = std::to_string(s.step) + "/" + std::to_string(s.max_steps) + " " +
                     std::to_string(static_cast<int>(fraction * 100.0)) + "% [" + format_duration(s.elapsed_seconds);
  if (s.steps_this_run > 0 && s.elapsed_seconds > 0) {
    const double seconds_per_step = s.elapsed_seconds / static_cast<double>(s.steps_this_run);
    line += '<';
    line += format_duration(seconds_per_step * static_cast<double>(s.max_steps - s.step));
    line += ", ";
    line += seconds_per_step <= 1.0 ? fixed(1.0 / seconds_per_step, 2) + "it/s" : fixed(seconds_per_step, 2) + "s/it";
  } else {
    line += "<?";
  }
  if (s.loss) line += ", loss=" + fixed(*s.loss, 4);
  return line + "]";
}

ProgressBar::ProgressBar(std::int64_t first_step, std::int64_t max_steps, bool enabled)
    : enabled_(enabled), first_step_(first_step), max_steps_(max_steps), start_(std::chrono::steady_clock::now()) {}

bool ProgressBar::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void ProgressBar::update(std::int64_t step, double loss) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // "\033[K" erases what a longer previous line left to the right.
  std::cerr << "\r" << progress_line({step, max_steps_, step - first_step_, elapsed, loss}) << "\033[K" << std::flush;
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

void ProgressBar::finish() {
  if (!drawn_) return;
  std::cerr << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace zt::train
