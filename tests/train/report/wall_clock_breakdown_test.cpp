// DeepSpeed's wall_clock_breakdown: the lines' format and sums (a training run's lines are
// tests/train/trainer_test.cpp's).
#include "train/report/wall_clock_breakdown.h"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

namespace zt::train {
namespace {

using Phase = WallClockBreakdown::Phase;

// The value after "<name>: " in a breakdown line.
double field(const std::string& line, const std::string& name) {
  std::smatch match;
  EXPECT_TRUE(std::regex_search(line, match, std::regex("\\| " + name + ": ([0-9.]+)"))) << name << " in " << line;
  return match.empty() ? -1.0 : std::stod(match[1]);
}

void spend(WallClockBreakdown& breakdown, Phase phase, int ms) {
  breakdown.start(phase);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  breakdown.stop(phase);
}

TEST(WallClockBreakdown, LinesAreDeepSpeedsAndSumOverTheMicroBatches) {
  WallClockBreakdown breakdown(Device::cpu());
  spend(breakdown, Phase::kForward, 3);
  spend(breakdown, Phase::kBackwardInner, 5);
  spend(breakdown, Phase::kBackwardAllreduce, 2);
  const std::string first = breakdown.micro_step_line();
  EXPECT_TRUE(std::regex_match(first, std::regex("time \\(ms\\) \\| fwd_microstep: [0-9.]+ \\| bwd_microstep: [0-9.]+ "
                                                 "\\| bwd_inner_microstep: [0-9.]+ \\| bwd_allreduce_microstep: "
                                                 "[0-9.]+ \\| step_microstep: [0-9.]+")))
      << first;
  EXPECT_GE(field(first, "fwd_microstep"), 3.0);
  EXPECT_GE(field(first, "bwd_inner_microstep"), 5.0);
  EXPECT_NEAR(field(first, "bwd_microstep"),
              field(first, "bwd_inner_microstep") + field(first, "bwd_allreduce_microstep"), 0.02);
  EXPECT_EQ(field(first, "step_microstep"), 0.0);

  spend(breakdown, Phase::kForward, 4);
  spend(breakdown, Phase::kStep, 1);
  const std::string second = breakdown.micro_step_line();
  EXPECT_EQ(field(second, "bwd_microstep"), 0.0) << "the micro-batch sums start again";
  EXPECT_GE(field(second, "step_microstep"), 1.0);
  const std::string step = breakdown.step_line();
  EXPECT_TRUE(std::regex_match(step, std::regex("time \\(ms\\) \\| fwd: [0-9.]+ \\| bwd: [0-9.]+ \\| bwd_inner: "
                                                "[0-9.]+ \\| bwd_allreduce: [0-9.]+ \\| step: [0-9.]+")))
      << step;
  EXPECT_NEAR(field(step, "fwd"), field(first, "fwd_microstep") + field(second, "fwd_microstep"), 0.02);
  EXPECT_EQ(field(breakdown.step_line(), "fwd"), 0.0) << "the step sums start again";
}

}  // namespace
}  // namespace zt::train
