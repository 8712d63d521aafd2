// zerotune launch on the CPU: torchrun's environment in every rank, output prefixed by rank,
// and a failing rank stopping the others at once with its status.
#include <gtest/gtest.h>

#include <chrono>

#include "distributed/launch/launcher.h"
#include "tests/common/op_test_util.h"

namespace zt::distributed {
namespace {

using namespace std::chrono_literals;

LaunchOptions shell(int nproc, const std::string& script) {
  return parse_launch_arguments(
      {"--nproc-per-node", std::to_string(nproc), "--master_port", "29611", "sh", "-c", script});
}

TEST(Launcher, EveryRankGetsTorchrunsEnvironmentAndItsOutputIsPrefixed) {
  ::testing::internal::CaptureStdout();
  int status =
      launch(shell(3, "echo \"env $RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT ${#ZT_JOB_TOKEN}\""));
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0) << out;
  for (int rank = 0; rank < 3; ++rank) {
    std::string line = "[rank " + std::to_string(rank) + "] env " + std::to_string(rank) + " " + std::to_string(rank) +
                       " 3 127.0.0.1 29611 32";
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }
}

TEST(Launcher, AFailingRankStopsTheOthersAndItsStatusIsReturned) {
  const auto start = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStdout();
  int status = launch(shell(3, "if [ \"$RANK\" = 1 ]; then echo boom; exit 7; fi; sleep 30"));
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 7);
  EXPECT_NE(out.find("[rank 1] boom"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 1 exited with status 7"), std::string::npos) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
}

TEST(Launcher, BadArgumentsAreNamed) {
  testing::expect_mentions(testing::error_of([] {
                             parse_launch_arguments({"--nproc_per_node", "x", "sh"});
                           }),
                           {"--nproc_per_node takes an integer"});
  testing::expect_mentions(testing::error_of([] {
                             parse_launch_arguments({"--nprocs", "2", "sh"});
                           }),
                           {"unknown option --nprocs"});
  testing::expect_mentions(testing::error_of([] {
                             parse_launch_arguments({"--nproc_per_node", "2"});
                           }),
                           {"no command given"});
  testing::expect_mentions(testing::error_of([] {
                             parse_launch_arguments({"--nnodes", "2", "--node_rank", "2", "sh"});
                           }),
                           {"--node_rank"});
}

}  // namespace
}  // namespace zt::distributed
