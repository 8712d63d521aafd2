// The fp16 loss scaler against DeepSpeed's state machine, step by step.
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "train/optim/loss_scaler.h"

namespace zt::train {
namespace {

LossScalerConfig small_config() {
  LossScalerConfig config;
  config.initial_scale_power = 4;  // 16
  config.loss_scale_window = 3;
  config.hysteresis = 2;
  config.min_loss_scale = 2.0;
  return config;
}

TEST(LossScaler, StartsAtTwoToTheInitialPower) {
  LossScaler scaler(LossScalerConfig{});
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_TRUE(scaler.is_dynamic());
}

TEST(LossScaler, HysteresisAbsorbsTheFirstOverflowThenHalves) {
  LossScaler scaler(small_config());
  scaler.update(true);  // hysteresis 2 -> 1, scale stays
  EXPECT_EQ(scaler.scale(), 16.0);
  EXPECT_EQ(scaler.state().current_hysteresis, 1);
  scaler.update(true);  // now halves
  EXPECT_EQ(scaler.scale(), 8.0);
  EXPECT_EQ(scaler.state().last_overflow_iteration, 1);
}

TEST(LossScaler, DoublesAfterAWindowOfCleanStepsSinceTheLastOverflow) {
  LossScaler scaler(small_config());
  scaler.update(true);   // iter 0 overflow: last_overflow = 0
  scaler.update(false);  // iter 1: (1 - 0) % 3 != 0
  scaler.update(false);  // iter 2
  EXPECT_EQ(scaler.scale(), 16.0);
  EXPECT_EQ(scaler.state().current_hysteresis, 1);
  scaler.update(false);  // iter 3: (3 - 0) % 3 == 0 -> doubles, hysteresis restored
  EXPECT_EQ(scaler.scale(), 32.0);
  EXPECT_EQ(scaler.state().current_hysteresis, 2);
}

TEST(LossScaler, WithoutOverflowTheFirstDoublingComesAtWindowMinusOne) {
  // last_overflow starts at -1, so (iter + 1) % window == 0 first at iter = window - 1.
  LossScaler scaler(small_config());
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 16.0);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 32.0);
}

TEST(LossScaler, ConsecutiveHysteresisRefillsOnEveryCleanStep) {
  LossScalerConfig config = small_config();
  config.consecutive_hysteresis = true;
  LossScaler scaler(config);
  scaler.update(true);
  EXPECT_EQ(scaler.state().current_hysteresis, 1);
  scaler.update(false);
  EXPECT_EQ(scaler.state().current_hysteresis, 2);
  scaler.update(true);  // absorbed again
  EXPECT_EQ(scaler.scale(), 16.0);
}

TEST(LossScaler, NeverGoesBelowTheMinimumAndThenStopsWithAHint) {
  LossScalerConfig config = small_config();
  config.hysteresis = 1;
  LossScaler scaler(config);
  for (double expected : {8.0, 4.0, 2.0}) {
    scaler.update(true);
    EXPECT_EQ(scaler.scale(), expected);
  }
  std::string msg = testing::error_of([&] { scaler.update(true); });
  EXPECT_NE(msg.find("minimum"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
}

TEST(LossScaler, StaticScaleNeverMoves) {
  LossScalerConfig config;
  config.static_scale = 128.0;
  LossScaler scaler(config);
  EXPECT_FALSE(scaler.is_dynamic());
  for (int i = 0; i < 5; ++i) scaler.update(i % 2 == 0);
  EXPECT_EQ(scaler.scale(), 128.0);
}

TEST(LossScaler, RestoredStateContinuesTheSameScales) {
  LossScaler scaler(small_config());
  scaler.update(true);
  scaler.update(true);
  scaler.update(false);
  LossScaler resumed(small_config());
  resumed.restore(scaler.state());
  for (bool overflow : {false, false, true, false}) {
    scaler.update(overflow);
    resumed.update(overflow);
    EXPECT_EQ(scaler.scale(), resumed.scale());
  }
}

TEST(LossScaler, BadConfigIsNamed) {
  LossScalerConfig config;
  config.hysteresis = 0;
  EXPECT_NE(testing::error_of([&] { LossScaler s(config); }).find("hysteresis"), std::string::npos);
  config = LossScalerConfig{};
  config.loss_scale_window = 0;
  EXPECT_NE(testing::error_of([&] { LossScaler s(config); }).find("loss_scale_window"), std::string::npos);
}

}  // namespace
}  // namespace zt::train
