// The scheduler block as DeepSpeed builds its scheduler: each type's own parameters and
// defaults, the rest refused; warmup_type's fallback; OneCycle's momentum refused unless off.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/train/deepspeed/deepspeed_test_arguments.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

DeepSpeedConfig with_scheduler(const std::string& scheduler) { return with_block("scheduler", scheduler); }

std::string scheduler_error(const std::string& scheduler) { return block_error("scheduler", scheduler); }

TEST(DeepSpeedScheduler, WarmupLrPeaksAtTheOptimizersRateUnlessTold) {
  DeepSpeedConfig config = with_scheduler(R"({"type": "WarmupLR", "params": {"warmup_num_steps": 50,
                                              "warmup_type": "linear", "last_batch_iteration": -1}})");
  EXPECT_EQ(config.scheduler->kind, ScheduleKind::kWarmupLR);
  EXPECT_FALSE(config.scheduler->warmup_log);
  EXPECT_EQ(config.scheduler->warmup_steps, 50);
  EXPECT_TRUE(config.scheduler->peak_lr_from_optimizer);
  EXPECT_TRUE(config.warnings.empty());
  config = with_scheduler(R"({"type": "WarmupLR", "params": {"warmup_max_lr": 3e-4}})");
  EXPECT_FALSE(config.scheduler->peak_lr_from_optimizer);
  EXPECT_EQ(config.scheduler->peak_lr, 3e-4);
  EXPECT_EQ(config.scheduler->warmup_steps, 1000);  // DeepSpeed's default
  config = with_scheduler(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 100}})");
  EXPECT_FALSE(config.scheduler->peak_lr_from_optimizer);
  EXPECT_EQ(config.scheduler->peak_lr, 1e-3);  // WarmupDecayLR's own default
  EXPECT_TRUE(with_scheduler(R"({"type": "WarmupCosineLR", "params": {"total_num_steps": 100}})")
                  .scheduler->peak_lr_from_optimizer);
}

// DeepSpeed warns about an unknown warmup_type and warms up logarithmically.
TEST(DeepSpeedScheduler, UnknownWarmupTypeWarnsAndFallsBackToLog) {
  DeepSpeedConfig config = with_scheduler(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 100,
                                              "warmup_num_steps": 10, "warmup_type": "cosine"}})");
  EXPECT_TRUE(config.scheduler->warmup_log);
  ASSERT_EQ(config.warnings.size(), 1u);
  testing::expect_mentions(config.warnings[0], {"scheduler.params.warmup_type 'cosine'", "log"});
}

TEST(DeepSpeedScheduler, EachTypeTakesItsOwnParameters) {
  testing::expect_mentions(
      scheduler_error(R"({"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "warmup_max_lr": 1e-3}})"),
      {"ds.json: scheduler.params.warmup_max_lr is not a setting of WarmupCosineLR", "cos_min_ratio"});
  testing::expect_mentions(scheduler_error(R"({"type": "WarmupLR", "params": {"warmup_num_step": 10}})"),
                           {"warmup_num_step (did you mean scheduler.params.warmup_num_steps?) is not a setting "
                            "of WarmupLR"});
  testing::expect_mentions(scheduler_error(R"({"type": "WarmupDecayLR", "params": {}})"),
                           {"total_num_steps is required by WarmupDecayLR"});
  testing::expect_mentions(scheduler_error(R"({"type": "WarmupLR", "params": {"warmup_num_steps": -1}})"),
                           {"warmup_num_steps must be >= 0"});
  testing::expect_mentions(scheduler_error(R"({"type": "StepLR", "params": {}})"), {"'StepLR' is not supported"});
  EXPECT_NE(with_scheduler(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 5, "warmup_num_steps": 10}})")
                .warnings.at(0)
                .find("total_num_steps 5 is less than warmup_num_steps 10: the run ends during the warmup"),
            std::string::npos);
  testing::expect_mentions(
      with_scheduler(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 1, "warmup_num_steps": 0}})")
          .warnings.at(0),
      {"total_num_steps 1 is less than warmup_num_steps 0 (read as 2, DeepSpeed's shortest warmup)"});
  const DeepSpeedConfig resumed =
      with_scheduler(R"({"type": "WarmupLR", "params": {"warmup_num_steps": 10, "last_batch_iteration": 40}})");
  testing::expect_mentions(resumed.warnings.at(0), {"last_batch_iteration = 40"});
}

TEST(DeepSpeedScheduler, OneCycleNeedsItsMomentumCycleOff) {
  const std::string params = R"("cycle_min_lr": 1e-5, "cycle_max_lr": 1e-3, "cycle_first_step_size": 100,
      "cycle_first_stair_count": 5, "decay_step_size": 10, "decay_lr_rate": 0.1, "cycle_min_mom": 0.85,
      "cycle_max_mom": 0.99, "decay_mom_rate": 0.0)";
  testing::expect_mentions(scheduler_error(R"({"type": "OneCycle", "params": {)" + params + "}}"),
                           {"scheduler.params.cycle_momentum", "beta1", "\"cycle_momentum\": false"});
  const DeepSpeedConfig config =
      with_scheduler(R"({"type": "OneCycle", "params": {)" + params + R"(, "cycle_momentum": false}})");
  const OneCycleConfig& cycle = config.scheduler->one_cycle;
  EXPECT_EQ(config.scheduler->kind, ScheduleKind::kOneCycle);
  EXPECT_EQ(cycle.min_lr, 1e-5);
  EXPECT_EQ(cycle.max_lr, 1e-3);
  EXPECT_EQ(cycle.first_step_size, 100);
  EXPECT_EQ(cycle.second_step_size, 100);  // defaults to the first
  EXPECT_EQ(cycle.first_stair_count, 5);
  EXPECT_EQ(cycle.second_stair_count, 5);
  EXPECT_EQ(cycle.decay_step_size, 10);
  EXPECT_EQ(cycle.decay_lr_rate, 0.1);
  EXPECT_TRUE(config.warnings.empty());
  testing::expect_mentions(scheduler_error(R"({"type": "OneCycle", "params": {"cycle_max_lr": 1e-3}})"),
                           {"cycle_min_lr is required by OneCycle"});
  testing::expect_mentions(scheduler_error(R"({"type": "OneCycle", "params": {"cycle_min_lr": 1e-5,
                                               "cycle_max_lr": 1e-3, "cycle_first_step_size": 0}})"),
                           {"cycle_first_step_size must be > 0"});
}

TEST(DeepSpeedScheduler, LrRangeTest) {
  const DeepSpeedConfig config = with_scheduler(R"({"type": "LRRangeTest", "params": {"lr_range_test_min_lr": 1e-4,
      "lr_range_test_step_size": 50, "lr_range_test_step_rate": 3.0, "lr_range_test_staircase": true}})");
  const RangeTestConfig& test = config.scheduler->range_test;
  EXPECT_EQ(test.min_lr, 1e-4);
  EXPECT_EQ(test.step_size, 50);
  EXPECT_EQ(test.step_rate, 3.0);
  EXPECT_TRUE(test.staircase);
  testing::expect_mentions(scheduler_error(R"({"type": "LRRangeTest", "params": {"lr_range_test_step_size": 0}})"),
                           {"lr_range_test_step_size must be > 0"});
}

}  // namespace
}  // namespace zt::train
