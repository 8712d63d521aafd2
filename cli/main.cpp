// zerotune: one binary, many subcommands (see `zerotune --help`). Errors print as
// "zerotune <command>: error: <message>" and exit non-zero; nothing aborts on user input.
#include <algorithm>
#include <iostream>

#include "cli/command.h"
#include "runtime/error.h"
#include "zerotune/build_info.h"

namespace {

void print_help() {
  std::cout << "zerotune " << zt::build::kVersion
            << " — fine-tuning and inference for GLM and Qwen models, no framework needed\n\n"
            << "usage: zerotune <command> [options]\n\ncommands:\n";
  auto commands = zt::cli::registry();
  std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& command : commands)
    std::cout << "  " << command.name << std::string(12 - std::min<std::size_t>(command.name.size(), 11), ' ')
              << command.summary << "\n";
  std::cout << "\n`zerotune <command> --help` describes a command's options.\n"
            << "Environment: ZT_LOG_LEVEL=debug|info|warn|error, ZT_LOG_ALL_RANKS=1.\n";
}

const zt::cli::Command* find_command(const std::string& name) {
  for (const auto& command : zt::cli::registry())
    if (command.name == name) return &command;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_help();
    return args.empty() ? zt::cli::kExitUsage : 0;
  }
  if (args[0] == "--version") {
    std::cout << "zerotune " << zt::build::kVersion << " (" << zt::build::kGitRevision << ")\n";
    return 0;
  }
  const zt::cli::Command* command = find_command(args[0]);
  if (command == nullptr) {
    std::cerr << "zerotune: error: unknown command '" << args[0] << "'; run `zerotune --help` for the list\n";
    return zt::cli::kExitUsage;
  }
  try {
    return command->run(std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const zt::NoGpuError& e) {
    std::cerr << "zerotune " << command->name << ": error: " << e.what() << "\n";
    return zt::cli::kExitNoGpu;
  } catch (const std::exception& e) {
    std::cerr << "zerotune " << command->name << ": error: " << e.what() << "\n";
    return zt::cli::kExitError;
  }
}
