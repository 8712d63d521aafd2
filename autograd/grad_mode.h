// Whether operations record themselves for backward on this thread. NoGradGuard turns
// recording off for a scope (evaluation, optimizer steps, checkpointed forwards).
#pragma once

namespace zt::autograd {

bool grad_enabled();

class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Turns recording back on inside a no-grad scope (the recompute of a checkpoint).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace zt::autograd
