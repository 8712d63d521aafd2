// What `zerotune train` says when a stop signal (Ctrl-C, a scheduler's SIGTERM) ends it between
// steps: where it stopped, the last checkpoint this run saved (or resumed from) and the command
// that goes on from it — the run's own command line with --resume_from_checkpoint DIR added,
// or put in place of the one it was given — or, when there is none, how to get one sooner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt::train {

struct Interruption {
  int signal = 0;
  std::int64_t step = 0;  // the last step completed
  std::int64_t max_steps = 0;
  std::string last_checkpoint = {};  // empty: this run has none
  // When checkpoints are saved (--save_strategy): every save_steps steps, or, without
  // save_steps, at the end of each epoch; saves_checkpoints false: never.
  bool saves_checkpoints = true;
  std::optional<std::int64_t> save_steps = std::nullopt;
  bool launched = false;  // one rank of a launcher's job: the command is the rank's
};

// `command_line` is the process's argv (own_command_line()).
std::string interruption_message(const Interruption& stop, const std::vector<std::string>& command_line);

// `command_line` with --resume_from_checkpoint `checkpoint` in place of the one given (as
// `--flag value`, `--flag=value` or an arguments file's `name=value` override), or added at the
// end, quoted for a POSIX shell.
std::string resume_command(const std::vector<std::string>& command_line, const std::string& checkpoint);

// This process's arguments as it was started (/proc/self/cmdline); empty when unreadable.
std::vector<std::string> own_command_line();

}  // namespace zt::train
