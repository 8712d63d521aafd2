#include "autograd/grad_mode.h"

namespace zt::autograd {
namespace {

thread_local bool recording = true;

}  // namespace

bool grad_enabled() { return recording; }

template <bool kRecording>
GradModeGuard<kRecording>::GradModeGuard() : previous_(recording) {
  recording = kRecording;
}

template <bool kRecording>
GradModeGuard<kRecording>::~GradModeGuard() {
  recording = previous_;
}

template class GradModeGuard<false>;
template class GradModeGuard<true>;

}  // namespace zt::autograd
