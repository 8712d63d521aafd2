// zt::UsageError: a command line refused before any work — an unknown flag or command, a flag
// without its value or with a value of the wrong kind, a required flag missing, flags that
// exclude each other, arguments that contradict each other. The CLI maps it to exit code 2;
// every other zt::Error is exit code 1 (zt::NoGpuError 3).
#pragma once

#include <string>

#include "runtime/error.h"

namespace zt {

class UsageError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void fail_usage(const std::string& message);

}  // namespace zt

// ZT_REQUIRE_USAGE(cond, message): ZT_REQUIRE for the command line (a UsageError).
#define ZT_REQUIRE_USAGE(cond, message)     \
  do {                                      \
    if (!(cond)) ::zt::fail_usage(message); \
  } while (0)
