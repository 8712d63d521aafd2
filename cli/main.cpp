// zerotune: one binary, many subcommands (see `zerotune --help`). Errors print as
// "zerotune <command>: error: <message>" and exit non-zero: 2 for a zt::UsageError (the
// command line is wrong), 3 for a zt::NoGpuError, 1 for every other error; nothing aborts on
// user input.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "runtime/error.h"
#include "runtime/json_text.h"
#include "runtime/terminal/closest_name.h"
#include "runtime/usage_error.h"
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

std::string unknown_command_message(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& command : zt::cli::registry()) names.push_back(command.name);
  const std::optional<std::string> closest = zt::closest_name(name, names);
  return "unknown command '" + name + "'" + (closest ? " (did you mean " + *closest + "?)" : "") +
         "; run `zerotune --help` for the list";
}

// The last word on a std::filesystem error that no check of the user's paths caught: which
// path and why, in place of the library's "filesystem error: ..." text.
std::string path_error_message(const std::filesystem::filesystem_error& e) {
  std::string paths = e.path1().string();
  if (!e.path2().empty()) paths += " and " + e.path2().string();
  return "cannot use " + paths + ": " + e.code().message();
}

int report(const zt::cli::Command& command, const std::string& message, int exit_code) {
  std::cerr << "zerotune " << command.name << ": error: " << message << "\n";
  return exit_code;
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
    std::cerr << "zerotune: error: " << unknown_command_message(args[0]) << "\n";
    return zt::cli::kExitUsage;
  }
  try {
    return command->run(std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const zt::UsageError& e) {
    return report(*command, e.what(), zt::cli::kExitUsage);
  } catch (const zt::NoGpuError& e) {
    return report(*command, e.what(), zt::cli::kExitNoGpu);
  } catch (const std::filesystem::filesystem_error& e) {
    return report(*command, path_error_message(e), zt::cli::kExitError);
  } catch (const nlohmann::json::exception& e) {  // a JSON value of an unexpected kind no reader named
    return report(*command, "unexpected JSON content: " + zt::json_error_detail(e), zt::cli::kExitError);
  } catch (const std::exception& e) {
    return report(*command, e.what(), zt::cli::kExitError);
  }
}
