// The step profiler on the CPU (host clock): intervals go to the innermost open region, the
// top level is untracked, the families add up to the step, regions are counted, and regions
// outside a step or on another thread cost nothing and count nowhere.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "runtime/error.h"
#include "runtime/profile/step_profiler.h"

namespace zt {
namespace {

void busy_for(std::chrono::milliseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
  }
}

const OpFamilyTime& of(const StepProfile& profile, OpFamily family) {
  return profile.families[static_cast<std::size_t>(family)];
}

TEST(StepProfiler, TimeGoesToTheInnermostRegionAndAddsUpToTheStep) {
  // The test's own clock readings around each section are the expected times, so a loaded
  // machine that stretches the busy loops cannot fail it: only the attribution is checked.
  using Clock = std::chrono::steady_clock;
  auto ms_between = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  StepProfiler profiler(Device::cpu());
  profiler.begin_step();
  const Clock::time_point step_begin = Clock::now();
  busy_for(std::chrono::milliseconds(4));  // untracked
  Clock::time_point gemm_begin, inner_begin, inner_end, gemm_end;
  {
    gemm_begin = Clock::now();
    ProfileRegion gemm(OpFamily::kGemm);
    busy_for(std::chrono::milliseconds(10));
    {
      inner_begin = Clock::now();
      ProfileRegion inner(OpFamily::kCollective);
      busy_for(std::chrono::milliseconds(20));
      inner_end = Clock::now();
    }
    gemm_end = Clock::now();
  }
  profiler.end_step();
  const double inner_ms = ms_between(inner_begin, inner_end);
  const double gemm_own_ms = ms_between(gemm_begin, gemm_end) - inner_ms;
  const double untracked_ms = ms_between(step_begin, gemm_begin);
  const StepProfile& profile = profiler.profile();
  constexpr double kSlack = 1.0;  // the profiler's clock reads sit just outside the test's
  EXPECT_EQ(profile.steps, 1);
  EXPECT_GE(of(profile, OpFamily::kUntracked).ms, 4.0);
  EXPECT_NEAR(of(profile, OpFamily::kUntracked).ms, untracked_ms, kSlack);
  EXPECT_GE(of(profile, OpFamily::kGemm).ms, 10.0);
  EXPECT_NEAR(of(profile, OpFamily::kGemm).ms, gemm_own_ms, kSlack) << "its nested collective is not its own";
  EXPECT_GE(of(profile, OpFamily::kCollective).ms, 20.0);
  EXPECT_NEAR(of(profile, OpFamily::kCollective).ms, inner_ms, kSlack);
  EXPECT_EQ(of(profile, OpFamily::kGemm).regions, 1);
  EXPECT_EQ(of(profile, OpFamily::kCollective).regions, 1);
  EXPECT_EQ(of(profile, OpFamily::kNorm).regions, 0);
  double sum = 0.0;
  for (const OpFamilyTime& time : profile.families) sum += time.ms;
  EXPECT_NEAR(sum, profile.step_ms, 1e-9);
}

TEST(StepProfiler, StepsAccumulateAndRegionsOutsideAStepCountNowhere) {
  StepProfiler profiler(Device::cpu());
  EXPECT_EQ(StepProfiler::active(), nullptr);
  { ProfileRegion before(OpFamily::kGemm); }
  for (int step = 0; step < 3; ++step) {
    profiler.begin_step();
    EXPECT_EQ(StepProfiler::active(), &profiler);
    std::thread other([] { EXPECT_EQ(StepProfiler::active(), nullptr); });  // per thread
    other.join();
    for (int i = 0; i < 2; ++i) ProfileRegion norm(OpFamily::kNorm);
    profiler.end_step();
  }
  { ProfileRegion after(OpFamily::kGemm); }
  EXPECT_EQ(StepProfiler::active(), nullptr);
  EXPECT_EQ(profiler.profile().steps, 3);
  EXPECT_EQ(of(profiler.profile(), OpFamily::kNorm).regions, 6);
  EXPECT_EQ(of(profiler.profile(), OpFamily::kGemm).regions, 0);
}

TEST(StepProfiler, AProfilerDestroyedMidStepStopsCounting) {
  {
    StepProfiler profiler(Device::cpu());
    profiler.begin_step();
  }
  EXPECT_EQ(StepProfiler::active(), nullptr);
  StepProfiler next(Device::cpu());
  next.begin_step();  // would refuse if the first were still active
  next.end_step();
  EXPECT_EQ(next.profile().steps, 1);
}

TEST(StepProfiler, RefusesNestedStepsAndAnEndWithoutABeginning) {
  StepProfiler first(Device::cpu()), second(Device::cpu());
  EXPECT_THROW(first.end_step(), Error);
  first.begin_step();
  EXPECT_THROW(second.begin_step(), Error);
  first.end_step();
}

TEST(OpFamily, EveryFamilyHasItsOwnName) {
  std::set<std::string> names;
  for (std::size_t f = 0; f < kOpFamilyCount; ++f) names.insert(op_family_name(static_cast<OpFamily>(f)));
  EXPECT_EQ(names.size(), kOpFamilyCount);
  EXPECT_EQ(names.count("?"), 0u);
}

}  // namespace
}  // namespace zt
