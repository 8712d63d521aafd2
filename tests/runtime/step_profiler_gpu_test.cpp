// The step profiler on a GPU: intervals are device time between events on the current stream,
// so a region holding a large copy gets that copy's time even though the host returns at once,
// and the families still add up to the step.
#include <gtest/gtest.h>

#include "runtime/profile/step_profiler.h"
#include "tensor/tensor.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

const OpFamilyTime& of(const StepProfile& profile, OpFamily family) {
  return profile.families[static_cast<std::size_t>(family)];
}

TEST(StepProfilerGpu, RegionsGetTheDeviceTimeOfTheirWork) {
  ZT_SKIP_WITHOUT_GPU();
  const Tensor source = Tensor::zeros({64, 1024, 1024}, DType::kF32, Device::cuda());  // 256 MiB
  StepProfiler profiler(Device::cuda());
  for (int step = 0; step < 2; ++step) {
    profiler.begin_step();
    {
      ProfileRegion copy(OpFamily::kElementwise);
      for (int i = 0; i < 4; ++i) Tensor copied = source.to(DType::kBF16);
    }
    { ProfileRegion nothing(OpFamily::kNorm); }
    profiler.end_step();
  }
  const StepProfile& profile = profiler.profile();
  EXPECT_EQ(profile.steps, 2);
  // 8 casts of 256 MiB read + 128 MiB written: milliseconds on any GPU, far more than a launch.
  EXPECT_GT(of(profile, OpFamily::kElementwise).ms, 0.2);
  EXPECT_GT(of(profile, OpFamily::kElementwise).ms, 10 * of(profile, OpFamily::kNorm).ms);
  EXPECT_EQ(of(profile, OpFamily::kNorm).regions, 2);
  double sum = 0.0;
  for (const OpFamilyTime& time : profile.families) sum += time.ms;
  EXPECT_NEAR(sum, profile.step_ms, 1e-6 * profile.step_ms + 1e-9);
}

}  // namespace
}  // namespace zt
