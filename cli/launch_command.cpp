// `zerotune launch`: one process per GPU, torchrun's flags (distributed/launch/launcher.h).
#include <iostream>

#include "cli/command.h"
#include "distributed/launch/launcher.h"

namespace zt::cli {
namespace {

int run_launch(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << distributed::launch_help();
    return args.empty() ? kExitUsage : 0;
  }
  return distributed::launch(distributed::parse_launch_arguments(args));
}

const Registration registration{{"launch", "start one process per GPU (torchrun's flags)", run_launch}};

}  // namespace
}  // namespace zt::cli
