#include "runtime/profile/step_profiler.h"

#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt {
namespace {

thread_local StepProfiler* active_profiler = nullptr;

std::size_t index_of(OpFamily family) { return static_cast<std::size_t>(family); }

}  // namespace

StepProfiler::StepProfiler(Device device) : device_(device) {}

StepProfiler::~StepProfiler() {
  if (active_profiler == this) active_profiler = nullptr;
}

StepProfiler* StepProfiler::active() { return active_profiler; }

void StepProfiler::begin_step() {
  ZT_REQUIRE(active_profiler == nullptr, "step profiler: a step is already being profiled on this thread");
  active_profiler = this;
  open_.clear();
  interval_family_.clear();
  host_marks_.clear();
  marks_ = 0;
  step_regions_ = {};
  mark();
}

void StepProfiler::end_step() {
  ZT_REQUIRE(active_profiler == this, "step profiler: end_step without begin_step on this thread");
  ZT_REQUIRE(open_.empty(), "step profiler: the step ended inside an op region");
  mark();
  active_profiler = nullptr;
  add_step_intervals();
}

void StepProfiler::enter(OpFamily family) {
  mark();
  open_.push_back(family);
  ++step_regions_[index_of(family)];
}

void StepProfiler::leave() {
  mark();
  open_.pop_back();
}

void StepProfiler::mark() {
  // A graph being captured replays later: its ops take no time now, and an event recorded
  // into a capture is not a timing event.
  if (device_.is_cuda() && stream_is_capturing(current_stream())) return;
  if (marks_ > 0) interval_family_.push_back(open_.empty() ? OpFamily::kUntracked : open_.back());
  if (device_.is_cuda()) {
    if (marks_ == events_.size()) events_.emplace_back(true);
    events_[marks_].record(current_stream());
  } else {
    host_marks_.push_back(Clock::now());
  }
  ++marks_;
}

void StepProfiler::add_step_intervals() {
  std::vector<double> interval_ms(marks_ - 1);
  if (device_.is_cuda()) {
    events_[marks_ - 1].synchronize();
    for (std::size_t i = 0; i + 1 < marks_; ++i) interval_ms[i] = events_[i].elapsed_ms(events_[i + 1]);
  } else {
    for (std::size_t i = 0; i + 1 < marks_; ++i)
      interval_ms[i] = std::chrono::duration<double, std::milli>(host_marks_[i + 1] - host_marks_[i]).count();
  }
  for (std::size_t i = 0; i < interval_ms.size(); ++i) {
    profile_.families[index_of(interval_family_[i])].ms += interval_ms[i];
    profile_.step_ms += interval_ms[i];
  }
  for (std::size_t f = 0; f < kOpFamilyCount; ++f) profile_.families[f].regions += step_regions_[f];
  ++profile_.steps;
}

}  // namespace zt
