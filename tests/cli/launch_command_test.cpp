// How `zerotune launch` reads its command line, once, by its flag table (cli/launch_command.h):
// torchrun's names and their '-' spellings, `--name=value`, the table's defaults, the command
// and its own flags passed on untouched from the first word that is no flag, bad values and a
// missing command refused naming what is wrong; and the binary's --help, which belongs to the
// launched command once the command has begun. Starting the processes:
// tests/distributed/launch/launcher_test.cpp.
#include "cli/launch_command.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/usage_error.h"
#include "tests/common/op_test_util.h"  // expect_mentions
#include "tests/common/process_test_util.h"

namespace zt::cli {
namespace {

using Words = std::vector<std::string>;
using testing::expect_mentions;

TEST(LaunchCommand, TorchrunsSpellingsWithDashesAndEqualsSigns) {
  const distributed::LaunchOptions dashes =
      read_launch_options({"--nproc-per-node", "4", "--nnodes=2", "--node-rank=1", "--master-addr", "10.0.0.1",
                           "--master-port=29600", "sh"});
  EXPECT_EQ(dashes.nproc_per_node, 4);
  EXPECT_EQ(dashes.nnodes, 2);
  EXPECT_EQ(dashes.node_rank, 1);
  EXPECT_EQ(dashes.master_addr, "10.0.0.1");
  EXPECT_EQ(dashes.master_port, 29600);
  EXPECT_EQ(dashes.command, Words{"sh"});

  const distributed::LaunchOptions underscores =
      read_launch_options({"--nproc_per_node=3", "--nnodes", "4", "--node_rank", "3", "--master_addr=node0",
                           "--master_port", "1234", "sh"});
  EXPECT_EQ(underscores.nproc_per_node, 3);
  EXPECT_EQ(underscores.nnodes, 4);
  EXPECT_EQ(underscores.node_rank, 3);
  EXPECT_EQ(underscores.master_addr, "node0");
  EXPECT_EQ(underscores.master_port, 1234);
}

TEST(LaunchCommand, FlagsNotGivenTakeTorchrunsDefaults) {
  const distributed::LaunchOptions options = read_launch_options({"zerotune", "env"});
  EXPECT_EQ(options.nproc_per_node, 1);
  EXPECT_EQ(options.nnodes, 1);
  EXPECT_EQ(options.node_rank, 0);
  EXPECT_EQ(options.master_addr, "127.0.0.1");
  EXPECT_EQ(options.master_port, 29500);
  EXPECT_EQ(options.command, (Words{"zerotune", "env"}));
}

TEST(LaunchCommand, TheCommandFromItsFirstWordIsPassedOnUntouched) {
  // Its own flags, launch's names among them, --help and '='-words included; "zerotune" stays
  // as written (the launcher resolves it when it starts the ranks).
  const Words command = {"zerotune",     "train", "--nproc_per_node", "8",   "--master_port=1",
                         "--output_dir", "out",   "--help",           "x=y", "--nnodes"};
  Words args = {"--nproc_per_node", "2"};
  args.insert(args.end(), command.begin(), command.end());
  const distributed::LaunchOptions options = read_launch_options(args);
  EXPECT_EQ(options.nproc_per_node, 2);
  EXPECT_EQ(options.master_port, 29500);
  EXPECT_EQ(options.command, command);
  EXPECT_EQ(read_launch_options({"--master_port=29611", "sh", "-c", "echo --nnodes 2"}).command,
            (Words{"sh", "-c", "echo --nnodes 2"}));
}

// Why read_launch_options refuses `args` (a zt::UsageError, which the CLI exits with 2 for).
std::string refusal(const Words& args) {
  try {
    read_launch_options(args);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "not refused as usage";
}

struct Refusal {
  Words args;
  const char* message;
};

TEST(LaunchCommand, BadValuesAreRefusedNamingTheFlag) {
  const std::vector<Refusal> refusals = {
      // The grammar's messages, the flag called by its name whichever spelling was given.
      {{"--nproc-per-node", "x", "sh"}, "--nproc_per_node must be a number, got 'x'"},
      {{"--nproc_per_node", "1.5", "sh"}, "--nproc_per_node must be a whole number, got '1.5'"},
      {{"--nnodes=0", "sh"}, "--nnodes must be a positive whole number, got '0'"},
      {{"--nprocs", "2", "sh"}, "unknown option '--nprocs'; see `zerotune launch --help`"},
      {{"--master-prot", "2", "sh"}, "unknown option '--master-prot' (did you mean --master-port?)"},
      {{"--master_addr", "--nnodes", "2", "sh"}, "option --master_addr needs a value"},
      // Bounds that the kind alone does not give.
      {{"--nnodes", "2", "--node_rank", "2", "sh"}, "--node_rank must be from 0 to 1 (one below --nnodes 2), got '2'"},
      {{"--node-rank=-1", "sh"}, "--node_rank must be from 0 to 0 (one below --nnodes 1), got '-1'"},
      {{"--master_port", "70000", "sh"}, "--master_port must be from 1 to 65535, got '70000'"},
      {{"--master_port=0", "sh"}, "--master_port must be from 1 to 65535, got '0'"},
      {{"--nproc_per_node", "3000000000", "sh"}, "--nproc_per_node must be from 1 to 2147483647"},
      {{"--nproc_per_node", "65536", "--nnodes", "65536", "sh"}, "--nnodes must be from 1 to 32767"},
      {{"--master_addr=", "sh"}, "--master_addr needs the address of node 0"},
  };
  for (const Refusal& refused : refusals) expect_mentions(refusal(refused.args), {refused.message});
}

TEST(LaunchCommand, AMissingCommandIsRefused) {
  expect_mentions(refusal({"--nproc_per_node", "2"}),
                  {"no command given", "zerotune launch --nproc_per_node 8 zerotune train"});
  expect_mentions(refusal({"--master_port=29611"}), {"no command given"});
  expect_mentions(refusal({}), {"no command given"});
}

class LaunchCommandBinary : public testing::CliTest {};

TEST_F(LaunchCommandBinary, HelpIsLaunchsAheadOfTheCommandAndTheCommandsAfterIt) {
  for (const char* asks : {"--help", "-h", "--nproc_per_node 2 --help", "--nproc_per_node 2 -h"}) {
    const testing::CliRun help = zerotune(std::string("launch ") + asks);
    EXPECT_EQ(help.exit_code, 0) << asks << "\n" << help.output;
    EXPECT_EQ(help.output.rfind("usage: zerotune launch", 0), 0u) << asks << "\n" << help.output;
  }
  const testing::CliRun passed_on = zerotune("launch --nproc_per_node 1 zerotune env --help");
  EXPECT_EQ(passed_on.exit_code, 0) << passed_on.output;
  EXPECT_NE(passed_on.output.find("[rank 0] usage: zerotune env"), std::string::npos) << passed_on.output;
  EXPECT_EQ(passed_on.output.find("usage: zerotune launch"), std::string::npos) << passed_on.output;
}

TEST_F(LaunchCommandBinary, ABadFlagStopsTheLaunchWithUsage) {
  const testing::CliRun refused = zerotune("launch --nnodes 2 --node_rank 5 zerotune env");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("zerotune launch: error: --node_rank must be from 0 to 1"), std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("[rank"), std::string::npos) << "nothing was started: " << refused.output;
}

}  // namespace
}  // namespace zt::cli
