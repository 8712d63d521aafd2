// `zerotune env`: the environment report (what ds_report and a careful start-up log show).
#include <iostream>

#include "cli/command.h"
#include "cli/flag_table.h"
#include "runtime/env_report.h"

namespace zt::cli {
namespace {

FlagTable flag_table() {
  return {.command = "env",
          .description =
              "Prints the zerotune build, CUDA driver/runtime, cuBLAS, NCCL and cuDNN versions,\n"
              "every visible GPU with peer access, and the launcher/NCCL variables that are set.\n",
          .groups = {
              {"Output", {{.name = "--json", .kind = FlagKind::kBool, .help = "the same report as one JSON object"}}}}};
}

int run_env(const std::vector<std::string>& args) {
  return run_with_flags(args, flag_table(), [](Flags& flags) {
    nlohmann::json report = collect_environment_report();
    std::cout << (flags.is_true("--json") ? report.dump(2) : format_environment_report(report)) << "\n";
    return 0;
  });
}

const Registration registration{{"env", "report build, libraries, GPUs and launcher environment", run_env, flag_table}};

}  // namespace
}  // namespace zt::cli
