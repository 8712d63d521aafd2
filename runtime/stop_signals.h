// SIGINT (Ctrl-C) and SIGTERM (what schedulers send before they kill a job) as a request to
// stop, which a long loop honours at a point where stopping leaves nothing half done. While a
// StopSignalScope lives, the first of these signals is only recorded: its handler does nothing
// else, since a handler can do little safely. A second one ends the process at once, as the
// signal does without a handler (exit status 128 + its number). Scopes nest, across threads
// too (in-process ranks each open one): the handlers are installed by the first scope, the
// record is cleared then, and the previous handlers come back when the last scope ends.
// System calls interrupted by the first signal are restarted (SA_RESTART).
#pragma once

#include "runtime/non_copyable.h"

namespace zt {

class StopSignalScope : NonCopyable {
 public:
  StopSignalScope();
  ~StopSignalScope();
};

// The first stop signal received since the outermost scope began (SIGINT or SIGTERM), or 0.
int stop_signal_received();

// "SIGINT", "SIGTERM", else "a stop signal".
const char* stop_signal_name(int signal);

}  // namespace zt
