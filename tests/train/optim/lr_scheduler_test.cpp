// Learning-rate schedules against the formulas of transformers' get_scheduler and
// DeepSpeed's lr_schedules, evaluated at hand-picked steps in DeepSpeed's step order.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tests/common/op_test_util.h"
#include "tests/train/optim/lr_schedule_test_util.h"
#include "train/optim/lr_scheduler.h"

namespace zt::train {
namespace {

TEST(LrSchedule, LinearWarmsUpFromZeroThenDecaysToZero) {
  LrSchedule schedule(hf(ScheduleKind::kLinear));
  EXPECT_DOUBLE_EQ(schedule.rate(0), 0.0);
  EXPECT_DOUBLE_EQ(schedule.rate(2), 0.5e-3);
  EXPECT_DOUBLE_EQ(schedule.rate(4), 1e-3);
  EXPECT_DOUBLE_EQ(schedule.rate(12), 1e-3 * 8.0 / 16.0);
  EXPECT_DOUBLE_EQ(schedule.rate(20), 0.0);
  EXPECT_DOUBLE_EQ(schedule.rate(25), 0.0);
}

TEST(LrSchedule, CosineReachesHalfAtMidpoint) {
  LrSchedule schedule(hf(ScheduleKind::kCosine));
  EXPECT_DOUBLE_EQ(schedule.rate(4), 1e-3);
  EXPECT_NEAR(schedule.rate(12), 0.5e-3, 1e-15);
  EXPECT_NEAR(schedule.rate(20), 0.0, 1e-15);
}

TEST(LrSchedule, CosineWithMinLrFloorsAtTheRate) {
  LrScheduleConfig config = hf(ScheduleKind::kCosineWithMinLr);
  config.min_lr_rate = 0.1;
  LrSchedule schedule(config);
  EXPECT_NEAR(schedule.rate(20), 1e-4, 1e-15);
  EXPECT_NEAR(schedule.rate(12), 1e-3 * (0.5 * 0.9 + 0.1), 1e-15);
}

TEST(LrSchedule, ConstantsIgnoreOrUseWarmup) {
  EXPECT_DOUBLE_EQ(LrSchedule(hf(ScheduleKind::kConstant)).rate(0), 1e-3);
  LrSchedule warm(hf(ScheduleKind::kConstantWithWarmup));
  EXPECT_DOUBLE_EQ(warm.rate(1), 0.25e-3);
  EXPECT_DOUBLE_EQ(warm.rate(19), 1e-3);
}

// DeepSpeed's schedulers set the first rate when built and are stepped after every update, so
// update t trains at DeepSpeed's get_lr() with last_batch_iteration t - 1. The expected rates
// below are DeepSpeed's formulas (lr_schedules.py) worked by hand at that iteration.
LrScheduleConfig deepspeed(ScheduleKind kind) {
  LrScheduleConfig config = schedule_config(kind, 1e-3, 10, 110);
  config.warmup_min_lr = 1e-5;
  return config;
}

TEST(LrSchedule, DeepSpeedWarmupLrTrainsTheFirstTwoUpdatesAtTheMinimum) {
  LrSchedule log_schedule(deepspeed(ScheduleKind::kWarmupLR));
  const double range = 1e-3 - 1e-5;
  EXPECT_DOUBLE_EQ(log_schedule.rate(0), 1e-5);  // as built
  EXPECT_DOUBLE_EQ(log_schedule.rate(1), 1e-5);  // last_batch_iteration 0: log(1) = 0
  EXPECT_DOUBLE_EQ(log_schedule.rate(2), 1e-5 + range * std::log(2.0) / std::log(10.0));
  EXPECT_DOUBLE_EQ(log_schedule.rate(5), 1e-5 + range * std::log(5.0) / std::log(10.0));
  EXPECT_DOUBLE_EQ(log_schedule.rate(10), 1e-3);  // log(10) / log(10)
  EXPECT_DOUBLE_EQ(log_schedule.rate(1000), 1e-3);
  LrScheduleConfig linear = deepspeed(ScheduleKind::kWarmupLR);
  linear.warmup_log = false;
  LrSchedule linear_schedule(linear);
  EXPECT_DOUBLE_EQ(linear_schedule.rate(0), 1e-5);
  EXPECT_DOUBLE_EQ(linear_schedule.rate(1), 1e-5);  // 0 / 10
  EXPECT_DOUBLE_EQ(linear_schedule.rate(2), 1e-5 + range * 0.1);
  EXPECT_DOUBLE_EQ(linear_schedule.rate(6), 1e-5 + range * 0.5);
  EXPECT_DOUBLE_EQ(linear_schedule.rate(11), 1e-3);
}

TEST(LrSchedule, DeepSpeedWarmupClampsToTwoSteps) {
  LrScheduleConfig config;
  config.kind = ScheduleKind::kWarmupLR;
  config.peak_lr = 1.0;
  config.warmup_steps = 0;
  LrSchedule schedule(config);
  EXPECT_DOUBLE_EQ(schedule.rate(0), 0.0);
  EXPECT_DOUBLE_EQ(schedule.rate(1), 0.0);  // log(1) / log(2)
  EXPECT_DOUBLE_EQ(schedule.rate(2), 1.0);  // log(2) / log(2)
}

TEST(LrSchedule, DeepSpeedWarmupDecayLr) {
  LrScheduleConfig config = deepspeed(ScheduleKind::kWarmupDecayLR);
  config.warmup_min_lr = 0.0;
  config.warmup_log = false;
  LrSchedule schedule(config);
  EXPECT_DOUBLE_EQ(schedule.rate(0), 0.0);
  EXPECT_DOUBLE_EQ(schedule.rate(1), 0.0);
  EXPECT_DOUBLE_EQ(schedule.rate(10), 0.9e-3);   // last 9: 9 / 10 of the warmup
  EXPECT_DOUBLE_EQ(schedule.rate(11), 1e-3);     // last 10: (110 - 10) / 100
  EXPECT_DOUBLE_EQ(schedule.rate(61), 0.5e-3);   // last 60: (110 - 60) / 100
  EXPECT_DOUBLE_EQ(schedule.rate(109), 0.2e-4);  // the last update of 110: (110 - 108) / 100
  EXPECT_DOUBLE_EQ(schedule.rate(111), 0.0);
  EXPECT_DOUBLE_EQ(schedule.rate(200), 0.0);
}

TEST(LrSchedule, DeepSpeedWarmupCosineLrStartsAtZeroAndHoldsItsFloor) {
  LrScheduleConfig config = deepspeed(ScheduleKind::kWarmupCosineLR);
  config.peak_lr = 2e-3;
  config.warmup_min_ratio = 0.1;
  config.cos_min_ratio = 1e-4;
  LrSchedule schedule(config);
  EXPECT_DOUBLE_EQ(schedule.rate(0), 0.0);         // DeepSpeed's rate before its first step
  EXPECT_DOUBLE_EQ(schedule.rate(1), 2e-3 * 0.1);  // warmup_min_ratio + 0
  EXPECT_DOUBLE_EQ(schedule.rate(2), 2e-3 * (0.1 + 0.9 * std::log(2.0) / std::log(10.0)));
  EXPECT_DOUBLE_EQ(schedule.rate(11), 2e-3 * (1e-4 + (1.0 - 1e-4) * (1.0 + std::cos(std::numbers::pi / 100)) / 2));
  const double at = (1.0 + std::cos(std::numbers::pi * 41.0 / 100.0)) / 2.0;  // last 50: 41 of 100 steps
  EXPECT_DOUBLE_EQ(schedule.rate(51), 2e-3 * (1e-4 + (1.0 - 1e-4) * at));
  EXPECT_NEAR(schedule.rate(110), 2e-3 * 1e-4, 1e-18);  // last 109: the cosine is done
  EXPECT_NEAR(schedule.rate(150), 2e-3 * 1e-4, 1e-18);  // and stays at cos_min_ratio
}

LrScheduleConfig one_cycle() {
  LrScheduleConfig config;
  config.kind = ScheduleKind::kOneCycle;
  config.one_cycle = {.min_lr = 1e-4,
                      .max_lr = 1e-3,
                      .decay_lr_rate = 0.5,
                      .first_step_size = 4,
                      .second_step_size = 4,
                      .decay_step_size = 2};
  return config;
}

TEST(LrSchedule, DeepSpeedOneCycleClimbsDescendsThenDecays) {
  LrSchedule schedule(one_cycle());
  EXPECT_DOUBLE_EQ(schedule.rate(0), 1e-4);
  EXPECT_NEAR(schedule.rate(1), 1e-4 + 0.9e-3 * 0.25, 1e-18);  // iteration 1 of 4 up
  EXPECT_NEAR(schedule.rate(4), 1e-3, 1e-18);                  // the top
  EXPECT_NEAR(schedule.rate(6), 1e-4 + 0.9e-3 * 0.5, 1e-18);   // halfway down
  EXPECT_NEAR(schedule.rate(8), 1e-4, 1e-18);                  // the cycle's end
  EXPECT_DOUBLE_EQ(schedule.rate(9), 1e-4 / 1.25);             // decay: 1 / 2 interval at rate 0.5
  EXPECT_DOUBLE_EQ(schedule.rate(12), 1e-4 / 2.0);             // 4 / 2 intervals
  LrScheduleConfig flat = one_cycle();
  flat.one_cycle.decay_lr_rate = 0.0;
  EXPECT_DOUBLE_EQ(LrSchedule(flat).rate(50), 1e-4);
}

TEST(LrSchedule, DeepSpeedOneCycleStairs) {
  LrScheduleConfig config = one_cycle();
  config.one_cycle.first_stair_count = 2;
  config.one_cycle.second_stair_count = 2;
  LrSchedule schedule(config);
  const double half = 1e-4 + 0.9e-3 * 0.5;
  EXPECT_DOUBLE_EQ(schedule.rate(1), 1e-4);  // floor(1 * 2 / 4) = 0 stairs up
  EXPECT_DOUBLE_EQ(schedule.rate(2), half);
  EXPECT_DOUBLE_EQ(schedule.rate(3), half);
  EXPECT_DOUBLE_EQ(schedule.rate(4), 1e-3);
  EXPECT_DOUBLE_EQ(schedule.rate(5), half);  // floor((8 - 5) * 2 / 4) = 1 stair
  EXPECT_DOUBLE_EQ(schedule.rate(7), 1e-4);
}

TEST(LrSchedule, DeepSpeedLrRangeTest) {
  LrScheduleConfig config;
  config.kind = ScheduleKind::kLRRangeTest;
  config.range_test = {.min_lr = 1e-3, .step_size = 10, .step_rate = 2.0, .staircase = false};
  EXPECT_DOUBLE_EQ(LrSchedule(config).rate(0), 1e-3);
  EXPECT_DOUBLE_EQ(LrSchedule(config).rate(5), 1e-3 * (1.0 + 2.0 * 0.5));
  config.range_test.staircase = true;
  EXPECT_DOUBLE_EQ(LrSchedule(config).rate(5), 1e-3);
  EXPECT_DOUBLE_EQ(LrSchedule(config).rate(10), 3e-3);
  EXPECT_DOUBLE_EQ(LrSchedule(config).rate(19), 3e-3);
}

TEST(LrSchedule, NamesParseAndUnknownOnesListTheAccepted) {
  EXPECT_EQ(hf_schedule_kind("cosine"), ScheduleKind::kCosine);
  EXPECT_EQ(deepspeed_schedule_kind("WarmupDecayLR"), ScheduleKind::kWarmupDecayLR);
  std::string msg = testing::error_of([] { hf_schedule_kind("cosine_restarts"); });
  EXPECT_NE(msg.find("cosine_restarts"), std::string::npos) << msg;
  EXPECT_NE(msg.find("constant_with_warmup"), std::string::npos) << msg;
  EXPECT_EQ(deepspeed_schedule_kind("OneCycle"), ScheduleKind::kOneCycle);
  msg = testing::error_of([] { deepspeed_schedule_kind("StepLR"); });
  EXPECT_NE(msg.find("WarmupCosineLR"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LRRangeTest"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train
