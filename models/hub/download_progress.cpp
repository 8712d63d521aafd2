#include "models/hub/download_progress.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "runtime/log.h"
#include "runtime/terminal/byte_format.h"
#include "runtime/terminal/progress_bar.h"

namespace zt::models::hub {
namespace {

constexpr int kBarWidth = 20;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

}  // namespace

std::string progress_bar_line(const ProgressState& state) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on chains of operator+.
  std::string line = state.label;
  line += ' ';
  if (state.total > 0) {
    const double fraction = std::min(1.0, static_cast<double>(state.held) / static_cast<double>(state.total));
    const int filled = static_cast<int>(fraction * kBarWidth);
    line += std::to_string(static_cast<int>(fraction * 100.0));
    line += "%|";
    line.append(filled, '#');
    line.append(kBarWidth - filled, ' ');
    line += "| ";
  }
  line += format_bytes(state.held);
  if (state.total > 0) {
    line += '/';
    line += format_bytes(state.total);
  }
  line += " [";
  line += train::format_duration(state.elapsed_seconds);
  const std::uint64_t received = state.held - std::min(state.held, state.resumed_from);
  if (state.elapsed_seconds > 0 && received > 0) {
    const double rate = static_cast<double>(received) / state.elapsed_seconds;
    if (state.total > state.held) {
      line += '<';
      line += train::format_duration(static_cast<double>(state.total - state.held) / rate);
    }
    line += ", ";
    line += format_bytes(static_cast<std::size_t>(rate));
    line += "/s";
  }
  line += ']';
  return line;
}

DownloadProgress::DownloadProgress(const std::string& repo_id, const std::string& filename, std::uint64_t total,
                                   std::uint64_t resumed_from, bool bar)
    : bar_(bar && isatty(STDERR_FILENO) == 1),
      state_{.label = filename, .held = resumed_from, .total = total, .resumed_from = resumed_from},
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (bar_) {
    draw();
    return;
  }
  // Whichever rank holds the download's lock prints it: not only rank 0.
  if (log::level() > log::Level::kInfo) return;
  std::string line = "downloading " + repo_id + " " + filename;
  if (total > 0) line += " (" + format_bytes(total) + ")";
  if (resumed_from > 0) line += ", resuming at " + format_bytes(resumed_from);
  log::write(log::Level::kInfo, line);
}

void DownloadProgress::update(std::uint64_t held) {
  state_.held = held;
  const auto now = std::chrono::steady_clock::now();
  if (!bar_ || now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  draw();
}

DownloadProgress::~DownloadProgress() { finish(); }

void DownloadProgress::finish() {
  if (!bar_ || finished_) return;
  finished_ = true;
  draw();
  std::cerr << "\n" << std::flush;
}

void DownloadProgress::draw() {
  state_.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // "\033[K" erases what a longer previous line left to the right.
  std::cerr << "\r" << progress_bar_line(state_) << "\033[K" << std::flush;
}

}  // namespace zt::models::hub
