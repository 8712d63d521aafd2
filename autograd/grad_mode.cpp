#include "autograd/grad_mode.h"

namespace zt::autograd {
namespace {

thread_local bool recording = true;

}  // namespace

bool grad_enabled() { return recording; }

NoGradGuard::NoGradGuard() : previous_(recording) { recording = false; }
NoGradGuard::~NoGradGuard() { recording = previous_; }

EnableGradGuard::EnableGradGuard() : previous_(recording) { recording = true; }
EnableGradGuard::~EnableGradGuard() { recording = previous_; }

}  // namespace zt::autograd
