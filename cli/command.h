// A subcommand of the `zerotune` binary. Each lives in its own cli/<name>_command.cpp and
// registers itself here, so `zerotune --help` lists exactly what exists.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/flag_table.h"

namespace zt::cli {

struct Command {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>& args)> run;
  // The command's flag table (cli/flag_table.h), for the commands that parse one.
  std::function<FlagTable()> flags = {};
};

std::vector<Command>& registry();

struct Registration {
  explicit Registration(Command command);
};

// Exit codes: 0 success, 1 an error, 2 bad usage (a zt::UsageError: the command line is refused
// before any work), 3 a GPU is needed but none is usable (a zt::NoGpuError).
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoGpu = 3;

}  // namespace zt::cli
