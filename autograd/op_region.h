// The step profiler's region of a recorded op (runtime/profile/step_profiler.h): each forward
// function opens one named as its backward node is named, and the engine opens one around
// every backward node, so forward and backward of an op land in the same family.
#pragma once

#include <string_view>

#include "runtime/profile/step_profiler.h"

namespace zt::autograd {

// The family of the op recorded as `op` ("linear", "rmsnorm", ...); kOtherOps for names of
// no family, such as an activation-checkpointed module's.
OpFamily op_family(std::string_view op);

// A ProfileRegion of op_family(op) while a step is profiled (the name is looked up only then).
class OpRegion {
 public:
  explicit OpRegion(std::string_view op)
      : region_(StepProfiler::active() != nullptr ? op_family(op) : OpFamily::kOtherOps) {}

 private:
  ProfileRegion region_;
};

}  // namespace zt::autograd
