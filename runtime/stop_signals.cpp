#include "runtime/stop_signals.h"

#include <signal.h>

#include <atomic>
#include <mutex>

namespace zt {
namespace {

static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

std::atomic<int> received{0};
std::mutex scopes_mutex;
int open_scopes = 0;
struct sigaction previous_interrupt {
}, previous_terminate{};

extern "C" void on_stop_signal(int signal_number) {
  int none = 0;
  if (received.compare_exchange_strong(none, signal_number)) return;
  // Asked again: end now, the way the signal does without a handler. It is blocked while its
  // handler runs, so it is delivered as this handler returns.
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

StopSignalScope::StopSignalScope() {
  const std::lock_guard<std::mutex> lock(scopes_mutex);
  if (open_scopes++ > 0) return;
  received = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_interrupt);
  sigaction(SIGTERM, &action, &previous_terminate);
}

StopSignalScope::~StopSignalScope() {
  const std::lock_guard<std::mutex> lock(scopes_mutex);
  if (--open_scopes > 0) return;
  sigaction(SIGINT, &previous_interrupt, nullptr);
  sigaction(SIGTERM, &previous_terminate, nullptr);
}

int stop_signal_received() { return received.load(); }

const char* stop_signal_name(int signal_number) {
  if (signal_number == SIGINT) return "SIGINT";
  if (signal_number == SIGTERM) return "SIGTERM";
  return "a stop signal";
}

}  // namespace zt
