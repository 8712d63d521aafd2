// The resolved training plan: HF's step arithmetic, precision and schedule from the flags,
// and the DeepSpeed config taking over its blocks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/common/op_test_util.h"
#include "train/args/training_plan.h"

namespace zt::train {
namespace {

TrainingArguments args_with(std::vector<std::string> extra) {
  std::vector<std::string> all = {"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t"};
  all.insert(all.end(), extra.begin(), extra.end());
  return parse_training_arguments(all);
}

// 10 samples: micro-batches of b give ceil(10 / b).
std::int64_t ten_samples(std::int64_t micro) { return (10 + micro - 1) / micro; }

TEST(TrainingPlan, StepsFromEpochsRoundPartialWindowsUp) {
  TrainingPlan plan = plan_training(args_with({"--per_device_train_batch_size", "2", "--gradient_accumulation_steps",
                                               "2", "--num_train_epochs", "2", "--warmup_ratio", "0.1"}),
                                    ten_samples);
  EXPECT_EQ(plan.steps_per_epoch, 3);  // 5 micro-batches / 2, rounded up
  EXPECT_EQ(plan.max_steps, 6);
  EXPECT_EQ(plan.schedule.warmup_steps, 1);  // ceil(0.6)
  EXPECT_EQ(plan.schedule.total_steps, 6);
  EXPECT_EQ(plan.precision, Precision::kFloat32);
  EXPECT_FALSE(plan.loss_scaler);
}

TEST(TrainingPlan, MaxStepsOverridesEpochsAndFp16BringsAScaler) {
  TrainingPlan plan =
      plan_training(args_with({"--max_steps", "7", "--fp16", "--per_device_train_batch_size", "5"}), ten_samples);
  EXPECT_EQ(plan.max_steps, 7);
  EXPECT_EQ(plan.num_train_epochs, 4.0);  // ceil(7 / 2 steps per epoch)
  EXPECT_EQ(plan.working_dtype(), DType::kF16);
  ASSERT_TRUE(plan.loss_scaler);
  EXPECT_EQ(plan.loss_scaler->initial_scale_power, 16);
}

TEST(TrainingPlan, CosineWithMinLrNeedsItsKwargs) {
  testing::expect_mentions(testing::error_of([] {
                             plan_training(args_with({"--lr_scheduler_type", "cosine_with_min_lr"}), ten_samples);
                           }),
                           {"--lr_scheduler_kwargs", "min_lr_rate"});
  TrainingPlan plan = plan_training(args_with({"--lr_scheduler_type", "cosine_with_min_lr", "--lr_scheduler_kwargs",
                                               "{\"min_lr\": 5e-6}", "--learning_rate", "5e-5"}),
                                    ten_samples);
  EXPECT_DOUBLE_EQ(plan.schedule.min_lr_rate, 0.1);
}

// HF's constant schedule ignores warm-up: asking for warm-up with it earns one warning naming
// the schedule that warms up; without warm-up, or with constant_with_warmup, nothing is said.
TEST(TrainingPlan, WarmupWithTheConstantScheduleWarns) {
  TrainingPlan plan = plan_training(
      args_with({"--max_steps", "10", "--lr_scheduler_type", "constant", "--warmup_steps", "3"}), ten_samples);
  ASSERT_EQ(plan.warnings.size(), 1u);
  testing::expect_mentions(plan.warnings[0], {"3 warm-up steps", "constant", "constant_with_warmup"});
  EXPECT_TRUE(
      plan_training(args_with({"--max_steps", "10", "--lr_scheduler_type", "constant"}), ten_samples).warnings.empty());
  EXPECT_TRUE(plan_training(args_with({"--max_steps", "10", "--lr_scheduler_type", "constant_with_warmup",
                                       "--warmup_steps", "3"}),
                            ten_samples)
                  .warnings.empty());
}

// --lr_scheduler_kwargs reach the schedule (tests/train/optim/lr_scheduler_hf_test.cpp has the
// rates); problems with them are usage errors reported with the others, before any loading.
TEST(TrainingPlan, ScheduleKwargsReachTheSchedule) {
  TrainingPlan plan = plan_training(args_with({"--max_steps", "20", "--lr_scheduler_type", "polynomial",
                                               "--lr_scheduler_kwargs", R"({"lr_end": 1e-6, "power": 2})"}),
                                    ten_samples);
  EXPECT_EQ(plan.schedule.kind, ScheduleKind::kPolynomial);
  EXPECT_DOUBLE_EQ(plan.schedule.hf.lr_end, 1e-6);
  EXPECT_DOUBLE_EQ(plan.schedule.hf.power, 2.0);
  EXPECT_TRUE(plan.warnings.empty());
  plan = plan_training(args_with({"--max_steps", "20", "--lr_scheduler_type", "warmup_stable_decay",
                                  "--lr_scheduler_kwargs", R"({"num_decay_steps": 5, "decay_type": "linear"})"}),
                       ten_samples);
  EXPECT_EQ(plan.schedule.hf.num_decay_steps, 5);
  EXPECT_EQ(plan.schedule.hf.decay_type, WsdShape::kLinear);
  EXPECT_TRUE(plan.warnings.empty());
  plan = plan_training(args_with({"--max_steps", "20", "--lr_scheduler_type", "inverse_sqrt", "--lr_scheduler_kwargs",
                                  R"({"timescale": 50})"}),
                       ten_samples);
  ASSERT_EQ(plan.warnings.size(), 1u);
  testing::expect_mentions(plan.warnings[0], {"timescale", "no effect", "inverse_sqrt", "10000 without warmup"});
  const std::string msg = testing::error_of([] {
    parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t",
                              "--lr_scheduler_type", "cosine_with_restarts", "--lr_scheduler_kwargs",
                              R"({"cycles": 2})", "--lr_scheduler_kwargs", "[1]"});
  });
  testing::expect_mentions(msg, {"--lr_scheduler_kwargs must be a JSON object"});
  testing::expect_mentions(
      testing::error_of([] {
        parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t",
                                  "--lr_scheduler_type", "cosine_with_restarts", "--lr_scheduler_kwargs",
                                  R"({"cycles": 2})"});
      }),
      {"--lr_scheduler_kwargs for cosine_with_restarts: cycles is not an option", "it takes num_cycles"});
}

// As HF's __post_init__: reduce_lr_on_plateau needs evaluations during training, on the loss;
// it has no warm-up, which a user asking for one is told.
TEST(TrainingPlan, ReduceLrOnPlateauNeedsEvaluations) {
  testing::expect_mentions(testing::error_of([] {
                             args_with({"--lr_scheduler_type", "reduce_lr_on_plateau"});
                           }),
                           {"reduce_lr_on_plateau requires an eval strategy", "--eval_strategy steps or epoch"});
  testing::expect_mentions(testing::error_of([] {
                             args_with({"--lr_scheduler_type", "reduce_lr_on_plateau", "--eval_strategy", "steps",
                                        "--validation_file", "v", "--metric_for_best_model", "accuracy"});
                           }),
                           {"metric_for_best_model \"accuracy\"", "eval_loss only"});
  TrainingPlan plan =
      plan_training(args_with({"--lr_scheduler_type", "reduce_lr_on_plateau", "--eval_strategy", "steps",
                               "--validation_file", "v", "--lr_scheduler_kwargs", R"({"patience": 2, "factor": 0.5})",
                               "--max_steps", "10", "--warmup_steps", "2", "--metric_for_best_model", "eval_loss"}),
                    ten_samples);
  EXPECT_EQ(plan.schedule.kind, ScheduleKind::kReduceOnPlateau);
  EXPECT_EQ(plan.schedule.plateau.patience, 2);
  EXPECT_DOUBLE_EQ(plan.schedule.plateau.factor, 0.5);
  ASSERT_EQ(plan.warnings.size(), 1u);
  testing::expect_mentions(plan.warnings[0], {"2 warm-up steps", "reduce_lr_on_plateau has no warm-up"});
}

TEST(TrainingPlan, IntervalsBelowOneAreSharesOfTheSteps) {
  // 10 micro-batches of 1, 4 epochs: 40 steps.
  TrainingPlan plan = plan_training(
      args_with({"--per_device_train_batch_size", "1", "--num_train_epochs", "4", "--logging_steps", "0.1",
                 "--save_steps", "0.25", "--eval_steps", "0.33", "--eval_strategy", "steps", "--validation_file", "v"}),
      ten_samples);
  EXPECT_EQ(plan.max_steps, 40);
  EXPECT_EQ(plan.logging_steps, 4);  // ceil(0.1 * 40)
  EXPECT_EQ(plan.save_steps, 10);
  EXPECT_EQ(plan.eval_steps, 14);  // ceil(13.2)
  plan = plan_training(args_with({"--max_steps", "30", "--logging_steps", "7"}), ten_samples);
  EXPECT_EQ(plan.logging_steps, 7);
  EXPECT_EQ(plan.eval_steps, 7);  // logging_steps when not given, as HF
  EXPECT_EQ(plan.save_steps, 500);
  plan = plan_training(args_with({"--max_steps", "30", "--logging_steps", "0.5"}), ten_samples);
  EXPECT_EQ(plan.eval_steps, 15);  // the share it inherits, resolved the same way
}

TEST(TrainingPlan, WarmupStepsBelowOneAreAShareAsInTransformers5) {
  TrainingPlan plan = plan_training(args_with({"--max_steps", "30", "--warmup_steps", "0.1"}), ten_samples);
  EXPECT_EQ(plan.schedule.warmup_steps, 3);
  plan = plan_training(args_with({"--max_steps", "30", "--warmup_steps", "4", "--warmup_ratio", "0.5"}), ten_samples);
  EXPECT_EQ(plan.schedule.warmup_steps, 4);  // whole steps win over the ratio
  plan = plan_training(args_with({"--max_steps", "30", "--warmup_ratio", "0.5"}), ten_samples);
  EXPECT_EQ(plan.schedule.warmup_steps, 15);
}

class DeepSpeedPlan : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    // One file per test and process: ctest runs this program's tests side by side.
    path_ = std::filesystem::temp_directory_path() /
            ("zt_plan_ds_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
             std::to_string(getpid()) + ".json");
    std::ofstream(path_) << text;
    return path_.string();
  }
  // The plan of ten samples under a config of `zero_optimization`, the micro-batch "auto".
  TrainingPlan plan_under_zero(const std::string& zero_optimization) {
    return plan_training(args_with({"--deepspeed", write(std::string(R"({"train_micro_batch_size_per_gpu": "auto", )")
                                                             .append(R"("zero_optimization": )")
                                                             .append(zero_optimization)
                                                             .append("}"))}),
                         ten_samples);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(DeepSpeedPlan, ConfigBlocksTakeOver) {
  std::string ds = write(R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
      "gradient_clipping": "auto", "fp16": {"enabled": true, "hysteresis": 1},
      "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": 0.0}},
      "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": "auto", "warmup_num_steps": "auto"}},
      "zero_optimization": {"stage": 2}})");
  TrainingPlan plan = plan_training(
      args_with({"--deepspeed", ds, "--fp16", "--learning_rate", "3e-4", "--per_device_train_batch_size", "2"}),
      ten_samples);
  EXPECT_EQ(plan.precision, Precision::kFloat16);
  ASSERT_TRUE(plan.loss_scaler);
  EXPECT_EQ(plan.loss_scaler->hysteresis, 1);
  EXPECT_EQ(plan.schedule.kind, ScheduleKind::kWarmupCosineLR);
  EXPECT_EQ(plan.schedule.peak_lr, 3e-4);
  EXPECT_EQ(plan.schedule.total_steps, plan.max_steps);
  EXPECT_EQ(plan.zero.stage, 2);
}

TEST_F(DeepSpeedPlan, ABatchThatContradictsTheFlagsIsAnErrorElseTheConfigDecides) {
  std::string ds = write(R"({"train_batch_size": 8})");
  testing::expect_mentions(
      testing::error_of([&] {
        plan_training(args_with({"--deepspeed", ds, "--per_device_train_batch_size", "2"}), ten_samples);
      }),
      {"ds train_batch_size=8 vs hf train_batch_size", "=2", "\"auto\""});
  TrainingPlan plan = plan_training(args_with({"--deepspeed", ds}), ten_samples);
  EXPECT_EQ(plan.micro_batch, 8);
  EXPECT_EQ(plan.steps_per_epoch, 2);
}

// Without fp16/bf16 blocks the flags choose the precision: the plan refuses a grad_accum_dtype
// that is neither fp32 nor the flags' working dtype, and keeps one that is.
TEST_F(DeepSpeedPlan, AGradAccumDtypeMustBeFp32OrTheFlagsWorkingDtype) {
  const std::string ds = write(R"({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2},
      "data_types": {"grad_accum_dtype": "fp16"}})");
  testing::expect_mentions(testing::error_of([&] {
                             plan_training(args_with({"--deepspeed", ds, "--bf16"}), ten_samples);
                           }),
                           {"data_types.grad_accum_dtype float16 is neither fp32 nor the working dtype, bfloat16",
                            R"(write "fp32" or "bfloat16")"});
  const TrainingPlan plan = plan_training(args_with({"--deepspeed", ds, "--fp16"}), ten_samples);
  EXPECT_EQ(plan.zero.grad_accum_dtype, DType::kF16);
}

// The config check_before_loading read is the one the plan fills and types: the file is not
// read again (here it is gone by then), its tensorboard block included.
TEST_F(DeepSpeedPlan, ThePlanTypesTheConfigReadBeforeLoading) {
  const std::string ds = write(R"({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2},
      "tensorboard": {"enabled": true, "output_path": "logs", "job_name": "sft"}})");
  const TrainingArguments args = args_with({"--deepspeed", ds});
  const std::optional<DeepSpeedInput> input = read_deepspeed_input(ds);
  std::filesystem::remove(ds);
  const TrainingPlan plan = plan_training(args, input, ten_samples);
  EXPECT_EQ(plan.zero.stage, 2);
  EXPECT_EQ(plan.tensorboard.deepspeed_folder, "logs/sft");
  testing::expect_mentions(testing::error_of([&] { plan_training(args, ten_samples); }), {"does not exist"});
}

// One decision for which engine runs: ZeRO at the config's stage wherever there are ranks;
// without them the single-device optimizer, except that stage 3 with parameter offload needs a
// rank of its own (one process then runs ZeRO-3 over one in-process rank).
TEST_F(DeepSpeedPlan, TheEngineFollowsTheRanksAndParameterOffload) {
  const TrainingPlan plain = plan_training(args_with({}), ten_samples);
  EXPECT_EQ(choose_engine(plain, false).kind, EngineKind::kSingleDevice);
  EXPECT_EQ(choose_engine(plain, true).kind, EngineKind::kZero);
  EXPECT_EQ(choose_engine(plain, true).zero_stage, 0);
  const TrainingPlan stage2 = plan_under_zero(R"({"stage": 2})");
  EXPECT_FALSE(choose_engine(stage2, false).needs_ranks());
  EXPECT_EQ(choose_engine(stage2, false).zero_stage, 0);
  EXPECT_EQ(choose_engine(stage2, true).zero_stage, 2);
  const TrainingPlan offload = plan_under_zero(R"({"stage": 3, "offload_param": {"device": "cpu"}})");
  EXPECT_EQ(choose_engine(offload, false).kind, EngineKind::kZero3);
  EXPECT_EQ(choose_engine(offload, true).kind, EngineKind::kZero3);
  const TrainingPlan stage3 = plan_under_zero(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})");
  EXPECT_EQ(choose_engine(stage3, false).kind, EngineKind::kSingleDevice);
  EXPECT_EQ(choose_engine(stage3, true).kind, EngineKind::kZero3);
}

}  // namespace
}  // namespace zt::train
