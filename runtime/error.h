// zt::Error is the one exception type of the project. Its message says what went wrong,
// where, and what to do; the CLI prints it and exits non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace zt {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when a command needs a GPU and none can be used; the CLI maps it to exit code 3.
class NoGpuError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void fail(const std::string& message);

}  // namespace zt

// ZT_REQUIRE(cond, message): user-facing precondition; `message` is a std::string expression.
#define ZT_REQUIRE(cond, message)     \
  do {                                \
    if (!(cond)) ::zt::fail(message); \
  } while (0)
