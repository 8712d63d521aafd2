// Learning-rate schedules against the formulas of transformers' get_scheduler and
// DeepSpeed's lr_schedules, evaluated at hand-picked steps.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tests/common/op_test_util.h"
#include "train/optim/lr_scheduler.h"

namespace zt::train {
namespace {

LrScheduleConfig hf(ScheduleKind kind) {
  LrScheduleConfig config;
  config.kind = kind;
  config.peak_lr = 1e-3;
  config.warmup_steps = 4;
  config.total_steps = 20;
  return config;
}

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

TEST(LrSchedule, DeepSpeedWarmupLrLogAndLinear) {
  LrScheduleConfig config;
  config.kind = ScheduleKind::kWarmupLR;
  config.warmup_min_lr = 1e-5;
  config.peak_lr = 1e-3;
  config.warmup_steps = 10;
  LrSchedule log_schedule(config);
  EXPECT_DOUBLE_EQ(log_schedule.rate(0), 1e-5);
  EXPECT_DOUBLE_EQ(log_schedule.rate(4), 1e-5 + (1e-3 - 1e-5) * std::log(5.0) / std::log(10.0));
  EXPECT_DOUBLE_EQ(log_schedule.rate(10), 1e-3);
  EXPECT_DOUBLE_EQ(log_schedule.rate(1000), 1e-3);
  config.warmup_log = false;
  EXPECT_DOUBLE_EQ(LrSchedule(config).rate(5), 1e-5 + (1e-3 - 1e-5) * 0.5);
}

TEST(LrSchedule, DeepSpeedWarmupClampsToTwoSteps) {
  LrScheduleConfig config;
  config.kind = ScheduleKind::kWarmupLR;
  config.peak_lr = 1.0;
  config.warmup_steps = 0;
  LrSchedule schedule(config);
  EXPECT_DOUBLE_EQ(schedule.rate(0), 0.0);  // log(1) / log(2)
  EXPECT_DOUBLE_EQ(schedule.rate(1), 1.0);  // log(2) / log(2)
}

TEST(LrSchedule, DeepSpeedWarmupDecayLr) {
  LrScheduleConfig config;
  config.kind = ScheduleKind::kWarmupDecayLR;
  config.peak_lr = 1e-3;
  config.warmup_steps = 10;
  config.total_steps = 110;
  config.warmup_log = false;
  LrSchedule schedule(config);
  EXPECT_DOUBLE_EQ(schedule.rate(10), 1e-3);
  EXPECT_DOUBLE_EQ(schedule.rate(60), 0.5e-3);
  EXPECT_DOUBLE_EQ(schedule.rate(200), 0.0);
}

TEST(LrSchedule, DeepSpeedWarmupCosineLr) {
  LrScheduleConfig config;
  config.kind = ScheduleKind::kWarmupCosineLR;
  config.peak_lr = 2e-3;
  config.warmup_steps = 10;
  config.total_steps = 110;
  config.warmup_min_ratio = 0.1;
  LrSchedule schedule(config);
  EXPECT_DOUBLE_EQ(schedule.rate(0), 2e-3 * 0.1);
  const double cmin = 1e-4;
  const double at = (1.0 + std::cos(std::numbers::pi * 41.0 / 100.0)) / 2.0;
  EXPECT_DOUBLE_EQ(schedule.rate(50), 2e-3 * (cmin + (1.0 - cmin) * at));
}

TEST(LrSchedule, NamesParseAndUnknownOnesListTheAccepted) {
  EXPECT_EQ(hf_schedule_kind("cosine"), ScheduleKind::kCosine);
  EXPECT_EQ(deepspeed_schedule_kind("WarmupDecayLR"), ScheduleKind::kWarmupDecayLR);
  std::string msg = testing::error_of([] { hf_schedule_kind("cosine_restarts"); });
  EXPECT_NE(msg.find("cosine_restarts"), std::string::npos) << msg;
  EXPECT_NE(msg.find("constant_with_warmup"), std::string::npos) << msg;
  msg = testing::error_of([] { deepspeed_schedule_kind("OneCycle"); });
  EXPECT_NE(msg.find("WarmupCosineLR"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train
