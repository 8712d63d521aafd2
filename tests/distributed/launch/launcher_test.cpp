// zerotune launch on the CPU: torchrun's environment in every rank, output prefixed by rank,
// and a failing rank stopping the others at once with its status. How its command line is read:
// tests/cli/launch_command_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "distributed/launch/launcher.h"

namespace zt::distributed {
namespace {

using namespace std::chrono_literals;

LaunchOptions shell(int nproc, const std::string& script) {
  return {.nproc_per_node = nproc, .master_port = 29611, .command = {"sh", "-c", script}};
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

// "zerotune" as the program is this very binary (here the test program), not one on PATH.
TEST(Launcher, TheProgramZerotuneIsThisVeryBinary) {
  ::testing::internal::CaptureStdout();
  const int status = launch(
      {.master_port = 29612, .command = {"zerotune", "--gtest_list_tests", "--gtest_filter=Launcher.TheProgram*"}});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("[rank 0]   TheProgramZerotuneIsThisVeryBinary"), std::string::npos) << out;
}

}  // namespace
}  // namespace zt::distributed
