#include "train/report/wall_clock_breakdown.h"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "runtime/check.h"

namespace zt::train {

void WallClockBreakdown::synchronize() const {
  if (!device_.is_cuda()) return;
  DeviceGuard guard(device_.index);
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
}

void WallClockBreakdown::start(Phase phase) {
  synchronize();
  started_[static_cast<int>(phase)] = Clock::now();
}

void WallClockBreakdown::stop(Phase phase) {
  synchronize();
  const int i = static_cast<int>(phase);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - started_[i]).count();
  micro_ms_[i] += ms;
  step_ms_[i] += ms;
}

std::string WallClockBreakdown::line(const std::array<double, kPhases>& ms, const char* suffix) {
  const double forward = ms[0], inner = ms[1], allreduce = ms[2], step = ms[3];
  char text[256];
  std::snprintf(text, sizeof(text),
                "time (ms) | fwd%s: %.2f | bwd%s: %.2f | bwd_inner%s: %.2f | bwd_allreduce%s: %.2f | step%s: %.2f",
                suffix, forward, suffix, inner + allreduce, suffix, inner, suffix, allreduce, suffix, step);
  return text;
}

std::string WallClockBreakdown::micro_step_line() {
  std::string text = line(micro_ms_, "_microstep");
  micro_ms_ = {};
  return text;
}

std::string WallClockBreakdown::step_line() {
  std::string text = line(step_ms_, "");
  step_ms_ = {};
  return text;
}

}  // namespace zt::train
