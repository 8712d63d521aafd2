// Whether operations record themselves for backward on this thread. NoGradGuard turns
// recording off for a scope (evaluation, optimizer steps, checkpointed forwards).
#pragma once

namespace zt::autograd {

bool grad_enabled();

// Sets recording to kRecording for a scope and restores the previous setting after.
template <bool kRecording>
class GradModeGuard {
 public:
  GradModeGuard();
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

using NoGradGuard = GradModeGuard<false>;
// Turns recording back on inside a no-grad scope (the recompute of a checkpoint).
using EnableGradGuard = GradModeGuard<true>;

}  // namespace zt::autograd
