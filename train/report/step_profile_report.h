// `zerotune train --profile_steps N`: which steps are profiled and what is printed after them.
// Step 1 warms up (allocator, cuBLAS heuristics, kernel selection) and is not profiled;
// steps 2 to N + 1 are. After the last of them (or at the end of training, when it ends
// first) the main rank prints one table, the families by time, and writes
// output_dir/step_profile.json:
//   {"device": "cuda:0", "first_step": 2, "last_step": 4, "steps": 3, "step_ms": 231.4,
//    "families": [{"name": "gemm", "ms_per_step": 120.3, "share": 0.52, "regions_per_step": 812}, ...]}
// ms are device time per step (runtime/profile/step_profiler.h); families of no time are left
// out; "untracked" is the GPU waiting on the host plus work no op marked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/profile/step_profiler.h"

namespace zt::train {

// The table of the log, one family per line, largest first.
std::string step_profile_table(const StepProfile& profile, std::int64_t first_step, const std::string& device);
nlohmann::json step_profile_json(const StepProfile& profile, std::int64_t first_step, const std::string& device);

class StepProfileSession {
 public:
  // `steps` > 0; the report goes to `output_dir` when `reports` (the main rank).
  StepProfileSession(Device device, std::int64_t steps, std::string output_dir, bool reports);

  // Around optimizer step `step` (1-based): profiles it when it is one of the chosen steps.
  void begin(std::int64_t step);
  void end(std::int64_t step);
  // Reports the steps profiled so far if the report has not been made.
  void finish();

 private:
  bool chosen(std::int64_t step) const { return step >= kFirstStep && step < kFirstStep + steps_; }
  void report();

  static constexpr std::int64_t kFirstStep = 2;
  StepProfiler profiler_;
  Device device_;
  std::int64_t steps_;
  std::string output_dir_;
  bool reports_;
  std::int64_t first_profiled_ = 0;  // 0 until a step is profiled
  bool reported_ = false;
};

}  // namespace zt::train
