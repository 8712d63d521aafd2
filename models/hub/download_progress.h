// What a download shows on stderr. On a terminal, a bar redrawn in place as bytes arrive:
//   model.safetensors  45%|#########           | 540.00 MiB/1.20 GiB [00:12<00:15, 45.00 MiB/s]
// Otherwise (a log file, a launcher's pipe) one line per file as it starts, so logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace zt::models::hub {

struct ProgressState {
  std::string label;               // the file's name
  std::uint64_t held = 0;          // bytes on disk
  std::uint64_t total = 0;         // 0: unknown
  std::uint64_t resumed_from = 0;  // bytes held before this run started: not part of the speed
  double elapsed_seconds = 0.0;
};

// The bar's text for one state.
std::string progress_bar_line(const ProgressState& state);

class DownloadProgress {
 public:
  // Prints the line for a file (or starts its bar, when `bar` and stderr is a terminal).
  DownloadProgress(const std::string& repo_id, const std::string& filename, std::uint64_t total,
                   std::uint64_t resumed_from, bool bar);
  ~DownloadProgress();  // finishes a bar an error left drawn
  DownloadProgress(const DownloadProgress&) = delete;
  DownloadProgress& operator=(const DownloadProgress&) = delete;

  void update(std::uint64_t held);  // redraws at most ten times a second
  void finish();                    // the bar's last state, then a new line

 private:
  bool bar_;
  bool finished_ = false;
  ProgressState state_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  void draw();
};

}  // namespace zt::models::hub
