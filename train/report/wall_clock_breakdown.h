// DeepSpeed's `wall_clock_breakdown`: how long each micro-batch's forward, backward (its inner
// part, the autograd backward, and its gradient reduction at the micro-batch's end) and the
// optimizer step took, printed as DeepSpeed prints them: after every micro-batch
//   time (ms) | fwd_microstep: … | bwd_microstep: … | bwd_inner_microstep: … | bwd_allreduce_microstep: … |
//   step_microstep: …
// and after every optimizer step the same phases summed over its micro-batches
//   time (ms) | fwd: … | bwd: … | bwd_inner: … | bwd_allreduce: … | step: …
// bwd is bwd_inner + bwd_allreduce. The device is synchronised at both ends of every phase, so
// each interval holds its GPU work (and the run slows down a little, as DeepSpeed's does).
#pragma once

#include <array>
#include <chrono>
#include <string>

#include "runtime/device.h"

namespace zt::train {

class WallClockBreakdown {
 public:
  enum class Phase { kForward, kBackwardInner, kBackwardAllreduce, kStep };

  explicit WallClockBreakdown(Device device) : device_(device) {}

  void start(Phase phase);
  void stop(Phase phase);
  // The micro-batch line since the last one; its sums start again.
  std::string micro_step_line();
  // The optimizer-step line since the last one; its sums start again.
  std::string step_line();

 private:
  static constexpr int kPhases = 4;
  using Clock = std::chrono::steady_clock;
  void synchronize() const;
  static std::string line(const std::array<double, kPhases>& ms, const char* suffix);

  Device device_;
  std::array<Clock::time_point, kPhases> started_{};
  std::array<double, kPhases> micro_ms_{}, step_ms_{};
};

// Times one phase for a scope when `breakdown` is given; does nothing otherwise.
class PhaseTimer {
 public:
  PhaseTimer(WallClockBreakdown* breakdown, WallClockBreakdown::Phase phase) : breakdown_(breakdown), phase_(phase) {
    if (breakdown_) breakdown_->start(phase_);
  }
  ~PhaseTimer() {
    if (breakdown_) breakdown_->stop(phase_);
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  WallClockBreakdown* breakdown_;
  WallClockBreakdown::Phase phase_;
};

}  // namespace zt::train
