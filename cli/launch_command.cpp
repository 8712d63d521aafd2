// `zerotune launch`: one process per GPU, torchrun's flags. The flags ahead of the command are
// declared in launch's table, which reads them into the launcher's options (unknown names
// answered with the nearest one, values checked by kind) and writes --help; the launcher
// (distributed/launch/launcher.h) starts the processes.
#include "cli/launch_command.h"

#include <cstdint>
#include <iostream>
#include <limits>

#include "cli/command.h"
#include "cli/flag_table.h"
#include "runtime/usage_error.h"

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

bool is_flag_word(const std::string& word) { return word.rfind("--", 0) == 0; }

// Where the command starts: past each flag and its value, which the grammar takes to be the next
// word unless that starts with "--" (every flag of launch takes a value).
std::size_t command_start(const std::vector<std::string>& args) {
  std::size_t i = 0;
  while (i < args.size() && is_flag_word(args[i])) {
    const bool value_attached = args[i].find('=') != std::string::npos;
    ++i;
    if (!value_attached && i < args.size() && !is_flag_word(args[i])) ++i;
  }
  return i;
}

// --name's whole number, refused by name outside [low, high]; `why` explains a bound that
// follows from another flag.
int integer_within(const Flags& flags, const std::string& name, std::int64_t low, std::int64_t high,
                   const std::string& why = "") {
  const std::int64_t value = flags.integer(name);
  std::string message = name;
  message.append(" must be from ").append(std::to_string(low)).append(" to ").append(std::to_string(high));
  message.append(why).append(", got '").append(std::to_string(value)).append("'");
  ZT_REQUIRE_USAGE(value >= low && value <= high, message);
  return static_cast<int>(value);
}

int run_launch(const std::vector<std::string>& args) {
  // Help is launch's among its flags, or as the first word where the command would start (-h is
  // no "--" word); after that, the command's own.
  const auto command = args.begin() + static_cast<std::ptrdiff_t>(command_start(args));
  if (args.empty() || asks_for_help({args.begin(), command}) || (command != args.end() && *command == "-h")) {
    std::cout << flags_help(flag_table());
    return args.empty() ? kExitUsage : 0;
  }
  return distributed::launch(read_launch_options(args));
}

const Registration registration{{"launch", "start one process per GPU (torchrun's flags)", run_launch, flag_table}};

}  // namespace

distributed::LaunchOptions read_launch_options(const std::vector<std::string>& args) {
  const auto command = args.begin() + static_cast<std::ptrdiff_t>(command_start(args));
  const Flags flags = parse_flags({args.begin(), command}, flag_table());
  distributed::LaunchOptions options;
  options.command.assign(command, args.end());
  ZT_REQUIRE_USAGE(!options.command.empty(),
                   "no command given, e.g. `zerotune launch --nproc_per_node 8 zerotune train ...`");
  constexpr std::int64_t kMostRanks = std::numeric_limits<int>::max();
  options.nproc_per_node = integer_within(flags, "--nproc_per_node", 1, kMostRanks);
  options.nnodes = integer_within(flags, "--nnodes", 1, kMostRanks / options.nproc_per_node,
                                  " (the job's ranks, --nproc_per_node times --nnodes, are at most 2147483647)");
  std::string below_nnodes = " (one below --nnodes ";
  below_nnodes.append(std::to_string(options.nnodes)).append(")");
  options.node_rank = integer_within(flags, "--node_rank", 0, options.nnodes - 1, below_nnodes);
  options.master_addr = flags.text("--master_addr");
  ZT_REQUIRE_USAGE(!options.master_addr.empty(), "--master_addr needs the address of node 0, got nothing");
  options.master_port = integer_within(flags, "--master_port", 1, 65535);
  return options;
}

}  // namespace zt::cli
