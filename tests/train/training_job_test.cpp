// train/training_job.cpp runs the engine choose_engine names for the plan: one process whose
// DeepSpeed config offloads parameters under stage 3 trains ZeRO-3 over one in-process rank
// (its shard, the whole model, in host memory); the same config without parameter offload
// trains with the single-device optimizer and says that stage 3 partitions nothing there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/process_test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/args/training_arguments.h"
#include "train/training_job.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

class TrainingJob : public testing::FolderTest {
 protected:
  // Trains the tiny model for two steps on the CPU under `zero_optimization` and returns what
  // the run printed.
  std::string train(const std::string& zero_optimization, const std::string& name) {
    const fs::path ds = dir_ / (name + ".json");
    std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": )" << zero_optimization
                      << "}";
    ::testing::internal::CaptureStderr();
    const int stopped_by = run_training_job(parse_training_arguments(
        testing::tiny_qwen_job_flags({"--finetuning_type", "full", "--max_steps", "2", "--save_strategy", "no",
                                      "--deepspeed", ds.string(), "--output_dir", (dir_ / name).string()})));
    const std::string printed = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(stopped_by, 0) << printed;
    EXPECT_TRUE(fs::exists(dir_ / name / "model.safetensors")) << printed;
    return printed;
  }
};

TEST_F(TrainingJob, ParameterOffloadOnOneProcessRunsZero3OverOneRank) {
  const std::string offloaded = train(R"({"stage": 3, "offload_param": {"device": "cpu"}})", "offload_param");
  EXPECT_NE(offloaded.find("ZeRO-3 parameter offload, steps up to 1"), std::string::npos) << offloaded;
  EXPECT_EQ(offloaded.find("partitions nothing"), std::string::npos) << offloaded;

  const std::string whole = train(R"({"stage": 3})", "stage3");
  EXPECT_EQ(whole.find("ZeRO-3 parameter offload"), std::string::npos) << whole;
  EXPECT_NE(whole.find("ZeRO stage 3 on 1 rank partitions nothing: one process trains with the single-device "
                       "optimizer"),
            std::string::npos)
      << whole;
}

}  // namespace
}  // namespace zt::train
