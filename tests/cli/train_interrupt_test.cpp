// `zerotune train` stopped by a signal, run as a user runs it on the shipped tiny model (CPU):
// SIGINT after the first checkpoint ends the run between steps with exit status 130, names
// the last complete checkpoint and the command that resumes from it, and leaves only complete
// checkpoints, one of which then resumes; SIGTERM (a scheduler's) before any checkpoint says
// there is none and how to save sooner, exit status 143, with in-process ranks stopping
// together.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"
#include "train/checkpoint/checkpoint.h"

namespace zt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kBinary = (fs::path(ZT_BINARY_DIR) / "bin/zerotune").string();
const std::string kArguments = "train --model_name_or_path " +
                               (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string() + " --train_file " +
                               (fs::path(ZT_SOURCE_DIR) / "examples/data/alpaca_demo.json").string() +
                               " --template qwen --finetuning_type full --per_device_train_batch_size 2 --device cpu "
                               "--logging_steps 1";

class TrainInterrupt : public testing::FolderTest {
 protected:
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    FolderTest::TearDown();
  }

  // Starts `zerotune <arguments>` with its output in log_; the process is zerotune itself.
  void start(const std::string& arguments) {
    ASSERT_TRUE(fs::exists(kBinary)) << "build the zerotune target first";
    log_ = dir_ / "run.log";
    const std::string command = "exec " + kBinary + " " + arguments + " > " + log_.string() + " 2>&1";
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }

  bool wait_for(const std::function<bool()>& ready) {
    for (const auto deadline = Clock::now() + std::chrono::minutes(3); Clock::now() < deadline;) {
      if (ready()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // The exit status, or -1 when it does not end within a minute (then it is killed).
  int wait_for_exit() {
    int status = 0;
    const bool ended = wait_for([&] { return waitpid(pid_, &status, WNOHANG) == pid_; });
    if (!ended) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
  }

  fs::path log_;
  pid_t pid_ = -1;
};

TEST_F(TrainInterrupt, CtrlCAfterACheckpointNamesItAndTheCommandThatResumes) {
  const fs::path out = dir_ / "out";
  const std::string arguments = kArguments + " --max_steps 100000 --save_steps 3 --output_dir " + out.string();
  start(arguments);
  ASSERT_TRUE(wait_for([&] { return !train::list_checkpoints(out.string()).empty(); })) << testing::read_text(log_);
  ASSERT_EQ(kill(pid_, SIGINT), 0);
  EXPECT_EQ(wait_for_exit(), 130) << testing::read_text(log_);
  const std::string printed = testing::read_text(log_);

  // Only complete checkpoints: each has its trainer_state.json, and no hidden partial folder.
  const std::vector<std::string> checkpoints = train::list_checkpoints(out.string());
  ASSERT_FALSE(checkpoints.empty());
  for (const fs::directory_entry& entry : fs::directory_iterator(out))
    EXPECT_EQ(entry.path().filename().string().find(".partial"), std::string::npos) << entry.path();
  const std::string last = checkpoints.back();
  EXPECT_NE(printed.find("stopped by SIGINT after step "), std::string::npos) << printed;
  EXPECT_NE(printed.find("The last complete checkpoint is " + last + "; to go on from it, run:\n  " + kBinary + " " +
                         arguments + " --resume_from_checkpoint " + last + "\n"),
            std::string::npos)
      << printed;
  EXPECT_EQ(printed.find("saved the model to"), std::string::npos) << "nothing is saved after the signal";
  EXPECT_FALSE(fs::exists(out / "model.safetensors"));

  // The checkpoint resumes: the printed command, run to a nearer end.
  const train::LoadedCheckpoint loaded = train::load_checkpoint(last);
  const std::int64_t step = loaded.run_state.at("global_step").get<std::int64_t>();
  const testing::CliRun resumed =
      testing::run_zerotune(kArguments + " --max_steps " + std::to_string(step + 2) + " --save_steps 3 --output_dir " +
                                out.string() + " --resume_from_checkpoint " + last,
                            dir_);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + last + " at step " + std::to_string(step)), std::string::npos)
      << resumed.output;
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
}

TEST_F(TrainInterrupt, SigtermBeforeAnyCheckpointSaysHowToSaveSooner) {
  const fs::path out = dir_ / "out";
  start(kArguments + " --max_steps 100000 --save_steps 100000 --inprocess_ranks 2 --output_dir " + out.string());
  ASSERT_TRUE(wait_for([&] {
    return testing::read_text(out / "train_log.jsonl").find("\"step\":2") != std::string::npos;
  })) << testing::read_text(log_);
  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  EXPECT_EQ(wait_for_exit(), 143) << testing::read_text(log_);
  const std::string printed = testing::read_text(log_);
  EXPECT_NE(
      printed.find(", before this run saved any checkpoint: there is nothing to resume from. The first "
                   "checkpoint was due at step 100000 (--save_steps 100000); a smaller --save_steps saves sooner"),
      std::string::npos)
      << printed;
  EXPECT_EQ(printed.find("stopped by SIGTERM after step "), printed.rfind("stopped by SIGTERM after step "))
      << "said once, by rank 0";
  EXPECT_TRUE(train::list_checkpoints(out.string()).empty());
}

}  // namespace
}  // namespace zt
