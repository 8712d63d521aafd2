// The DeepSpeed config's warnings are the same on every rank, and a job prints each once:
// two in-process ranks build their trainers from a config with one warning.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "distributed/communicators/inprocess_communicator.h"
#include "models/init.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/trainer.h"

namespace zt::train {
namespace {

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(DeepSpeedWarnings, PrintOncePerJobNotOncePerRank) {
  const std::filesystem::path ds = std::filesystem::temp_directory_path() / "zt_ds_warnings_once.json";
  std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto", "memory_breakdown": true,
                           "zero_optimization": {"stage": 1}})";
  const TrainingArguments args = parse_training_arguments(
      {"--model_name_or_path", "tiny", "--output_dir", (std::filesystem::temp_directory_path() / "zt_ds_warn").string(),
       "--train_file", "x", "--finetuning_type", "full", "--save_strategy", "no", "--max_steps", "1",
       "--per_device_train_batch_size", "2", "--deepspeed", ds.string()});
  std::vector<TokenizedSample> samples(8, TokenizedSample{{1, 2, 3, 4}, {-100, 2, 3, 4}});
  ::testing::internal::CaptureStderr();
  distributed::run_inprocess_ranks(2, std::chrono::seconds(30), [&](distributed::Communicator& comm) {
    models::CausalLM model = models::init_model(testing::tiny_trainer_config(), 7);
    TrainerModel trained;
    trained.model = &model;
    for (const auto& [name, variable] : model.named_parameters()) trained.trainable.push_back({name, variable, true});
    const TrainingPlan plan = plan_training(
        args, [](std::int64_t) { return 2; }, 2, 16);
    Trainer trainer(trained, TrainerData{samples, {}}, plan, &comm);
  });
  const std::string printed = ::testing::internal::GetCapturedStderr();
  std::filesystem::remove(ds);
  EXPECT_EQ(occurrences(printed, "memory_breakdown"), 1u) << printed;
}

// A scheduler block replaces --lr_scheduler_type, as under HF Trainer, which says nothing; the
// plan warns where the user named a schedule, and not otherwise.
TEST(DeepSpeedWarnings, ASchedulerBlockSaysTheNamedScheduleIsNotUsed) {
  const std::filesystem::path ds = std::filesystem::temp_directory_path() / "zt_ds_scheduler_block.json";
  std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto",
                           "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}})";
  auto plan_with = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {"--model_name_or_path", "tiny", "--output_dir", "o",        "--train_file", "x",
                                     "--max_steps",          "4",    "--deepspeed",  ds.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return plan_training(
        parse_training_arguments(argv), [](std::int64_t) { return 2; }, 1, 16);
  };
  auto mentions_schedule = [](const TrainingPlan& plan) {
    for (const std::string& w : plan.warnings)
      if (w.find("--lr_scheduler_type is not used") != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(mentions_schedule(plan_with({"--lr_scheduler_type", "cosine"})));
  EXPECT_FALSE(mentions_schedule(plan_with({})));
  std::filesystem::remove(ds);
}

}  // namespace
}  // namespace zt::train
