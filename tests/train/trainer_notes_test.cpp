// What the trainer says once at the start of a run whose settings do less, or something
// else, than a user may expect: a ZeRO stage on one rank, and a resume whose batch geometry
// or length differs from the checkpoint's. Each is said once, on rank 0, not per step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>

#include "distributed/communicators/inprocess_communicator.h"
#include "models/init.h"
#include "models/weights/weights.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/checkpoint/checkpoint.h"
#include "train/trainer.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

std::ptrdiff_t count_of(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

class TrainerNotes : public testing::FolderTest {
 protected:
  TrainingArguments arguments(const std::vector<std::string>& extra) {
    return testing::tiny_trainer_arguments(dir_, extra);
  }

  // Trains a fresh tiny model on 16 samples.
  void train(const TrainingArguments& args, distributed::Communicator* comm = nullptr) {
    auto model = std::make_shared<models::CausalLM>(models::init_model(testing::tiny_trainer_config(), 7));
    const TrainerModel trained = testing::train_every_parameter(model);
    const int world = comm ? comm->world_size() : 1;
    const TrainingPlan plan = plan_training(
        args, [&](std::int64_t micro) { return ((16 + micro - 1) / micro + world - 1) / world; }, world);
    // Sample s: tokens s, s + 3, s + 6, ... (mod 32), six of them.
    Trainer(trained, {testing::chained_samples(16, 6, 1, 1, 3), {}}, plan, comm).train();
  }

  std::string captured(const std::function<void()>& run) {
    ::testing::internal::CaptureStderr();
    run();
    return ::testing::internal::GetCapturedStderr();
  }

  std::string zero_config(int stage, bool offload = false) {
    const fs::path path = dir_ / ("ds_zero" + std::to_string(stage) + ".json");
    std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": )" << stage
                        << (offload ? R"(, "offload_optimizer": {"device": "cpu"})" : "") << "}}";
    return path.string();
  }
};

TEST_F(TrainerNotes, AZeroStageOnOneProcessSaysOnceThatItPartitionsNothing) {
  const std::string printed = captured([&] {
    train(arguments({"--max_steps", "3", "--logging_steps", "1", "--deepspeed", zero_config(3, true)}));
  });
  EXPECT_EQ(count_of(printed, "partitions nothing"), 1) << printed;
  testing::expect_mentions(
      printed, {"ZeRO stage 3 on 1 rank partitions nothing: one process trains with the single-device optimizer, the "
                "same steps and the same memory as stage 0, except that optimizer offload still keeps the fp32 master "
                "weights and Adam moments in host memory; no module is gathered or released and no layer is "
                "recomputed in backward"});
  const std::string stage0 = captured([&] {
    train(arguments({"--max_steps", "1", "--deepspeed", zero_config(0), "--overwrite_output_dir"}));
  });
  EXPECT_EQ(stage0.find("partitions nothing"), std::string::npos) << stage0;
}

// One rank with a communicator (a launcher's single GPU rank): the ZeRO engine runs with one
// rank; two ranks partition, and say nothing of it.
TEST_F(TrainerNotes, TheZeroEngineOnOneRankSaysWhatStillRuns) {
  const std::string one = captured([&] {
    distributed::run_inprocess_ranks(1, std::chrono::seconds(60), [&](distributed::Communicator& comm) {
      train(arguments({"--max_steps", "2", "--deepspeed", zero_config(3)}), &comm);
    });
  });
  EXPECT_EQ(count_of(one, "partitions nothing"), 1) << one;
  testing::expect_mentions(
      one, {"ZeRO stage 3 on 1 rank partitions nothing: the rank's partition is the whole model, so every model state "
            "stays whole on its GPU as under stage 0, and stage 3's collectives run with one rank; stage 3 still "
            "gathers each module into a buffer of its own before use and releases it after, and recomputes every "
            "layer in backward"});
  const std::string two = captured([&] {
    distributed::run_inprocess_ranks(2, std::chrono::seconds(60), [&](distributed::Communicator& comm) {
      train(arguments({"--max_steps", "2", "--deepspeed", zero_config(2), "--overwrite_output_dir"}), &comm);
    });
  });
  EXPECT_EQ(two.find("partitions nothing"), std::string::npos) << two;
}

// A checkpoint of 2 per device x 2 accumulation (4 samples a step) resumed with other
// settings: one message per changed setting; resumed as it was, none.
TEST_F(TrainerNotes, AResumeWithOtherSettingsSaysWhatChangedOnce) {
  const std::vector<std::string> base = {
      "--max_steps", "4", "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "2"};
  std::vector<std::string> saving = base;
  saving.insert(saving.end(), {"--save_strategy", "steps", "--save_steps", "2"});
  train(arguments(saving));
  const std::string checkpoint = (dir_ / "checkpoint-2").string();
  const nlohmann::json run_state = load_checkpoint(checkpoint).run_state;
  EXPECT_EQ(run_state["micro_batch"], 2);
  EXPECT_EQ(run_state["gradient_accumulation_steps"], 2);
  EXPECT_EQ(run_state["world_size"], 1);

  auto resume = [&](std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--resume_from_checkpoint", checkpoint});
    return captured([&] { train(arguments(flags)); });
  };
  const std::string same = resume(base);
  EXPECT_EQ(same.find("resuming " + checkpoint), std::string::npos) << same;

  const std::string changed = resume({"--max_steps", "6", "--per_device_train_batch_size", "4",
                                      "--gradient_accumulation_steps", "2", "--logging_steps", "1"});
  EXPECT_EQ(count_of(changed, "resuming .*checkpoint-2 "), 2) << changed;
  EXPECT_NE(changed.find("resuming " + checkpoint +
                         " with per_device_train_batch_size 4 where it trained with 2: a step now takes 8 samples "
                         "instead of 4 (4 per device x 2 accumulation x 1 rank(s)). Training goes on after the 8 "
                         "samples of epoch 0 the checkpoint had trained on"),
            std::string::npos)
      << changed;
  EXPECT_NE(changed.find("--gradient_accumulation_steps 1 keeps the global batch of 4"), std::string::npos) << changed;
  EXPECT_NE(changed.find("resuming " + checkpoint +
                         " with max_steps 6 where the checkpoint's run had 4: 4 steps are left, and the learning-rate "
                         "schedule is that of a run of 6 steps from step 3 on"),
            std::string::npos)
      << changed;
}

}  // namespace
}  // namespace zt::train
