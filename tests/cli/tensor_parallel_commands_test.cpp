// `zerotune generate --tp N` and `zerotune chat --tp N` as a user runs them, on the shipped
// tiny model on the CPU: in-process ranks, and processes started by `zerotune launch` (over
// Gloo), give what --tp 1 gives, printed once; launches and sizes that cannot work are refused
// by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "distributed/communicators/gloo_communicator.h"
#include "tests/common/process_test_util.h"

namespace zt::testing {
namespace {

const std::string kModel = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";

std::filesystem::path folder() { return test_folder("infer_tensor_parallel_cli"); }

std::string launch(int processes) {
  return "launch --nproc_per_node " + std::to_string(processes) + " --master_port " +
         std::to_string(free_loopback_port()) + " " + std::string(ZT_BINARY_DIR) + "/bin/zerotune ";
}

// Three prompts of a JSON Lines file, generated together.
std::string generate_flags() {
  const std::filesystem::path prompts = folder() / "prompts.jsonl";
  std::ofstream(prompts) << "\"hello there\"\n{\"prompt\": \"the cat sat\"}\n\"one two three four five\"\n";
  return "generate --model_name_or_path " + kModel + " --input_file " + prompts.string() +
         " --max_new_tokens 32 --device cpu --output_format ids --max_batch 2";
}

// The lines a launched run's rank 0 wrote, without the launcher's "[rank 0] " in front;
// other ranks' lines are counted in `others`.
std::string rank0_lines(const std::string& output, int& others) {
  std::istringstream lines(output);
  std::string line, kept;
  const std::string prefix = "[rank 0] ";
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) == 0)
      kept += line.substr(prefix.size()) + "\n";
    else if (line.rfind("[rank ", 0) == 0)
      ++others;
  }
  return kept;
}

TEST(TensorParallelCli, GenerateInProcessRanksPrintWhatOneRankPrints) {
  const CliRun one = run_zerotune(generate_flags() + " --tp 1", folder());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  // A line of ids per prompt, then the line saying the answers stopped at --max_new_tokens.
  ASSERT_EQ(std::count(one.output.begin(), one.output.end(), '\n'), 4) << one.output;
  EXPECT_NE(one.output.find("generate: 3 of 3 answers were cut at the length limit"), std::string::npos) << one.output;
  for (const char* tp : {"2", "6"}) {
    const CliRun split = run_zerotune(generate_flags() + " --tp " + tp, folder());
    ASSERT_EQ(split.exit_code, 0) << split.output;
    EXPECT_EQ(split.output, one.output) << "--tp " << tp;
  }
}

TEST(TensorParallelCli, GenerateLaunchedRanksPrintOnceWhatOneRankPrints) {
  if (!distributed::gloo_available()) GTEST_SKIP() << "zerotune was built without Gloo (libgloo-dev)";
  const CliRun one = run_zerotune(generate_flags(), folder());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const CliRun launched = run_zerotune(launch(2) + generate_flags() + " --tp 2", folder());
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  int others = 0;
  EXPECT_EQ(rank0_lines(launched.output, others), one.output) << launched.output;
  EXPECT_EQ(others, 0) << "only rank 0 prints: " << launched.output;
}

TEST(TensorParallelCli, ChatGivesOneRanksAnswersInProcessAndLaunched) {
  const std::filesystem::path turns = folder() / "turns.txt";
  std::ofstream(turns) << "hello\nhow are you\n/reset\nhi\n/exit\n";
  const std::string chat = "chat --model_name_or_path " + kModel + " --max_new_tokens 12 --device cpu";
  const CliRun one = run_zerotune(chat + " < " + turns.string(), folder());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const CliRun split = run_zerotune(chat + " --tp 2 < " + turns.string(), folder());
  ASSERT_EQ(split.exit_code, 0) << split.output;
  EXPECT_EQ(split.output, one.output);
  if (!distributed::gloo_available()) GTEST_SKIP() << "zerotune was built without Gloo (libgloo-dev)";
  const CliRun launched = run_zerotune(launch(2) + chat + " --tp 2 < " + turns.string(), folder());
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  int others = 0;
  // The launcher ends rank 0's last, unfinished line ("user> ") with a newline of its own.
  EXPECT_EQ(rank0_lines(launched.output, others), one.output + "\n") << launched.output;
  EXPECT_EQ(others, 0) << launched.output;
}

TEST(TensorParallelCli, SizesAndLaunchesThatCannotWorkAreRefused) {
  const CliRun unsplittable = run_zerotune(generate_flags() + " --tp 4", folder());
  EXPECT_NE(unsplittable.exit_code, 0);
  EXPECT_NE(unsplittable.output.find("6 attention heads do not divide by 4"), std::string::npos) << unsplittable.output;
  EXPECT_NE(unsplittable.output.find("1, 2, 6"), std::string::npos) << unsplittable.output;
  if (!distributed::gloo_available()) GTEST_SKIP() << "zerotune was built without Gloo (libgloo-dev)";
  const CliRun mismatched = run_zerotune(launch(2) + generate_flags() + " --tp 6", folder());
  EXPECT_NE(mismatched.exit_code, 0);
  EXPECT_NE(mismatched.output.find("--tp 6, but the launcher started 2 process(es)"), std::string::npos)
      << mismatched.output;
}

}  // namespace
}  // namespace zt::testing
