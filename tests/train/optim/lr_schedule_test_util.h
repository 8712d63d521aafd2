// What the learning-rate schedule tests (lr_scheduler_test.cpp, lr_scheduler_hf_test.cpp)
// share: the schedules they start from and the comparison of a schedule's rates at given steps.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "train/optim/lr_scheduler.h"

namespace zt::train {

inline LrScheduleConfig schedule_config(ScheduleKind kind, double peak_lr, std::int64_t warmup_steps,
                                        std::int64_t total_steps) {
  LrScheduleConfig config;
  config.kind = kind;
  config.peak_lr = peak_lr;
  config.warmup_steps = warmup_steps;
  config.total_steps = total_steps;
  return config;
}

// transformers' schedules as the tests run them: peak 1e-3, 4 warmup steps, 20 steps.
inline LrScheduleConfig hf(ScheduleKind kind) { return schedule_config(kind, 1e-3, 4, 20); }

// Each (step, rate) of `expected`: the schedule's rate at that step, to the last bits
// (EXPECT_DOUBLE_EQ).
inline void expect_rates(const LrSchedule& schedule, const std::vector<std::pair<std::int64_t, double>>& expected) {
  for (const auto& [step, rate] : expected) EXPECT_DOUBLE_EQ(schedule.rate(step), rate) << "step " << step;
}

}  // namespace zt::train
