// The training loop honouring HF's run flags on a tiny random Qwen2 on the CPU:
// logging_strategy, logging_first_step, steps as shares, do_eval's final evaluation,
// eval_on_start, eval_delay and data_seed.
#include <gtest/gtest.h>

#include "models/init.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/checkpoint/checkpoint.h"
#include "train/trainer.h"

namespace zt::train {
namespace {

std::vector<TokenizedSample> samples(int count) { return testing::chained_samples(count, 5, 4, 7, 1); }

class HonouredRunFlags : public testing::FolderTest {
 protected:
  // Trains a fresh model (seed 3) on 8 samples, micro-batch 2: 4 steps per epoch.
  TrainerState run(std::vector<std::string> extra) {
    extra.insert(extra.begin(), {"--per_device_train_batch_size", "2", "--validation_file", "v"});
    const TrainingArguments args = testing::tiny_trainer_arguments(dir_, extra);
    auto model = std::make_shared<models::CausalLM>(models::init_model(testing::tiny_trainer_config(), 3));
    const TrainerModel trained = testing::train_every_parameter(model);
    TrainerData data{samples(8), samples(3)};
    const TrainingPlan plan = plan_training(args, [](std::int64_t micro) { return (8 + micro - 1) / micro; });
    Trainer trainer(trained, std::move(data), plan);
    return trainer.train();
  }
};

// The steps of the entries that have `key`.
std::vector<std::int64_t> steps_with(const TrainerState& state, const char* key) {
  std::vector<std::int64_t> steps;
  for (const nlohmann::json& entry : state.log_history)
    if (entry.contains(key)) steps.push_back(entry["step"].get<std::int64_t>());
  return steps;
}

using Steps = std::vector<std::int64_t>;

TEST_F(HonouredRunFlags, LoggingStrategies) {
  EXPECT_EQ(steps_with(run({"--max_steps", "10", "--logging_steps", "4"}), "loss"), (Steps{4, 8, 10}));
  EXPECT_EQ(steps_with(run({"--max_steps", "10", "--logging_strategy", "epoch"}), "loss"), (Steps{4, 8, 10}));
  EXPECT_EQ(steps_with(run({"--max_steps", "10", "--logging_strategy", "epoch", "--logging_steps", "3"}), "loss"),
            (Steps{4, 8, 10}));
  EXPECT_EQ(steps_with(run({"--max_steps", "10", "--logging_steps", "4", "--logging_first_step"}), "loss"),
            (Steps{1, 4, 8, 10}));
  const TrainerState quiet = run({"--max_steps", "6", "--logging_strategy", "no"});
  EXPECT_TRUE(steps_with(quiet, "loss").empty());
  EXPECT_EQ(steps_with(quiet, "train_runtime"), Steps{6});  // the summary is still recorded, as in HF
  EXPECT_EQ(steps_with(run({"--max_steps", "10", "--logging_steps", "0.2"}), "loss"), (Steps{2, 4, 6, 8, 10}));
}

TEST_F(HonouredRunFlags, EvaluationFlags) {
  // do_eval alone: one evaluation after training, as HF's example scripts run one.
  TrainerState state = run({"--max_steps", "5", "--do_eval"});
  EXPECT_EQ(steps_with(state, "eval_loss"), Steps{5});
  EXPECT_TRUE(state.log_history.back().contains("eval_loss"));
  // With a strategy that just evaluated the last step, no second evaluation.
  EXPECT_EQ(
      steps_with(run({"--max_steps", "6", "--do_eval", "--eval_strategy", "steps", "--eval_steps", "3"}), "eval_loss"),
      (Steps{3, 6}));
  EXPECT_EQ(steps_with(run({"--max_steps", "6", "--eval_on_start", "--eval_strategy", "steps", "--eval_steps", "2",
                            "--eval_delay", "3"}),
                       "eval_loss"),
            (Steps{0, 4, 6}));
  EXPECT_EQ(steps_with(run({"--num_train_epochs", "3", "--eval_strategy", "epoch", "--eval_delay", "2"}), "eval_loss"),
            (Steps{8, 12}));
  EXPECT_EQ(steps_with(run({"--max_steps", "8", "--eval_strategy", "steps", "--eval_steps", "0.25"}), "eval_loss"),
            (Steps{2, 4, 6, 8}));
  EXPECT_TRUE(steps_with(run({"--max_steps", "3"}), "eval_loss").empty());
}

TEST_F(HonouredRunFlags, DataSeedOrdersTheDataAlone) {
  auto first_loss = [](const TrainerState& state) { return state.log_history.front()["loss"].get<double>(); };
  const TrainerState base = run({"--max_steps", "1", "--logging_steps", "1"});
  EXPECT_EQ(first_loss(run({"--max_steps", "1", "--logging_steps", "1", "--data_seed", "42"})), first_loss(base));
  bool differs = false;
  for (const char* seed : {"1", "2", "3", "4"})
    differs = differs ||
              first_loss(run({"--max_steps", "1", "--logging_steps", "1", "--data_seed", seed})) != first_loss(base);
  EXPECT_TRUE(differs);  // another data seed puts other samples in the first batch
}

}  // namespace
}  // namespace zt::train
