// The step profiler behind `zerotune train --profile_steps N`: where a training step's time
// goes, per op family (op_family.h).
//
// Every op marks its start and end (ProfileRegion); the profiler turns the marks into a
// timeline of intervals, each belonging to the innermost region open at the time, or to
// kUntracked when none is. On a GPU a mark is a timing event recorded on the thread's current
// stream, so an interval is device time: a kernel's run plus any wait for the host to launch
// the next one inside the same region; the top level's intervals are the GPU idling between
// ops (host gaps) and work nobody marked. On the CPU a mark is the host clock. The intervals
// of a step add up to the step exactly.
//
// One profiler per thread and step: the in-process ranks of a data-parallel run each time their
// own. A mark costs one event record (about a microsecond of host time), and the step ends
// with a synchronisation, so a profiled step runs a little slower than others.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "runtime/device.h"
#include "runtime/non_copyable.h"
#include "runtime/profile/op_family.h"
#include "runtime/streams/stream.h"

namespace zt {

struct OpFamilyTime {
  double ms = 0.0;
  std::int64_t regions = 0;  // how many regions of the family were entered (nested ones too)
};

// What the profiled steps added up to.
struct StepProfile {
  std::int64_t steps = 0;
  double step_ms = 0.0;  // all steps together
  PerOpFamily<OpFamilyTime> families{};
};

class StepProfiler : NonCopyable {
 public:
  explicit StepProfiler(Device device);
  // A step left unfinished (an error unwound it) stops counting.
  ~StepProfiler();

  // Starts timing a step on this thread; regions opened until end_step() count toward it.
  void begin_step();
  // Ends the step (waiting for its device work) and adds its intervals to profile().
  void end_step();
  const StepProfile& profile() const { return profile_; }

  // This thread's profiler inside a step, or null.
  static StepProfiler* active();
  void enter(OpFamily family);
  void leave();

 private:
  using Clock = std::chrono::steady_clock;
  // Closes the current interval, which belongs to the innermost open region.
  void mark();
  void add_step_intervals();

  Device device_;
  std::vector<OpFamily> open_;                 // the regions open now, innermost last
  std::vector<OpFamily> interval_family_;      // interval i lies between marks i and i + 1
  std::vector<Event> events_;                  // on a GPU: reused from step to step
  std::vector<Clock::time_point> host_marks_;  // on the CPU
  std::size_t marks_ = 0;
  PerOpFamily<std::int64_t> step_regions_{};
  StepProfile profile_;
};

// Times its scope as `family` when this thread is inside a profiled step; does nothing
// otherwise (a thread-local read), so ops carry one unconditionally.
class ProfileRegion {
 public:
  explicit ProfileRegion(OpFamily family) : profiler_(StepProfiler::active()) {
    if (profiler_) profiler_->enter(family);
  }
  ~ProfileRegion() {
    if (profiler_) profiler_->leave();
  }
  ProfileRegion(const ProfileRegion&) = delete;
  ProfileRegion& operator=(const ProfileRegion&) = delete;

 private:
  StepProfiler* profiler_;
};

}  // namespace zt
