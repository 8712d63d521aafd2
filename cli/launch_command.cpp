// `zerotune launch`: one process per GPU, torchrun's flags (distributed/launch/launcher.h). The
// flags ahead of the command are checked against the table here (unknown names with the nearest
// one, values by kind) and described by --help; the launcher reads them into its options.
#include <algorithm>
#include <iostream>

#include "cli/command.h"
#include "cli/flag_table.h"
#include "distributed/launch/launcher.h"

namespace zt::cli {
namespace {

FlagTable flag_table() {
  const distributed::LaunchOptions defaults;
  return {.command = "launch",
          .description =
              "Starts N processes of <command> on this node (zerotune's own torchrun), with RANK, LOCAL_RANK,\n"
              "WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and ZT_JOB_TOKEN set; prefixes output with\n"
              "the rank; when one rank fails, stops the others and exits with its status. Each process uses the\n"
              "GPU LOCAL_RANK among CUDA_VISIBLE_DEVICES. Multi-node: run it on every node with the same\n"
              "--master_addr/--master_port and ZT_JOB_TOKEN. The flags come before the command; torchrun's\n"
              "spellings with '-' (--nproc-per-node) are taken too.\n",
          .groups = {{"Processes (torchrun's names)",
                      {{.name = "--nproc_per_node",
                        .kind = FlagKind::kPositiveInteger,
                        .value = "N",
                        .help = "processes (GPUs) on this node",
                        .default_value = std::to_string(defaults.nproc_per_node),
                        .aliases = {"--nproc-per-node"}},
                       {.name = "--nnodes",
                        .kind = FlagKind::kPositiveInteger,
                        .value = "M",
                        .help = "nodes of the job",
                        .default_value = std::to_string(defaults.nnodes)},
                       {.name = "--node_rank",
                        .kind = FlagKind::kInteger,
                        .value = "R",
                        .help = "this node's rank, from 0 to M - 1",
                        .default_value = std::to_string(defaults.node_rank),
                        .aliases = {"--node-rank"}},
                       {.name = "--master_addr",
                        .value = "A",
                        .help = "the address of node 0, where the ranks meet",
                        .default_value = defaults.master_addr,
                        .aliases = {"--master-addr"}},
                       {.name = "--master_port",
                        .kind = FlagKind::kInteger,
                        .value = "P",
                        .help = "the port on node 0 where the ranks meet",
                        .default_value = std::to_string(defaults.master_port),
                        .aliases = {"--master-port"}}}}},
          .operands = "<command> [args...]"};
}

// The flags ahead of the command, their names spelt with '_' as the launcher reads any mix of
// '-' and '_': `--name value` or `--name=value`, up to the first word that is no flag.
std::vector<std::string> leading_flags(const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  for (std::size_t i = 0; i < args.size() && args[i].rfind("--", 0) == 0; ++i) {
    std::string flag = args[i];
    const std::size_t eq = flag.find('=');
    for (std::size_t c = 2; c < std::min(eq, flag.size()); ++c)
      if (flag[c] == '-') flag[c] = '_';
    flags.push_back(flag);
    if (eq == std::string::npos && i + 1 < args.size()) flags.push_back(args[++i]);
  }
  return flags;
}

int run_launch(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << flags_help(flag_table());
    return args.empty() ? kExitUsage : 0;
  }
  parse_flags(leading_flags(args), flag_table());
  return distributed::launch(distributed::parse_launch_arguments(args));
}

const Registration registration{{"launch", "start one process per GPU (torchrun's flags)", run_launch, flag_table}};

}  // namespace
}  // namespace zt::cli
