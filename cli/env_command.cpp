// `zerotune env`: the environment report (what ds_report and a careful start-up log show).
#include <iostream>

#include "cli/command.h"
#include "runtime/env_report.h"
#include "runtime/usage_error.h"

namespace zt::cli {
namespace {

int run_env(const std::vector<std::string>& args) {
  bool as_json = false;
  for (const auto& arg : args) {
    if (arg == "--json") {
      as_json = true;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: zerotune env [--json]\n\n"
                   "Prints the zerotune build, CUDA driver/runtime, cuBLAS, NCCL and cuDNN versions,\n"
                   "every visible GPU with peer access, and the launcher/NCCL variables that are set.\n"
                   "  --json   the same report as one JSON object\n";
      return 0;
    } else {
      fail_usage("unknown option '" + arg + "'; accepted: --json, --help");
    }
  }
  nlohmann::json report = collect_environment_report();
  std::cout << (as_json ? report.dump(2) : format_environment_report(report)) << "\n";
  return 0;
}

const Registration registration{{"env", "report build, libraries, GPUs and launcher environment", run_env}};

}  // namespace
}  // namespace zt::cli
