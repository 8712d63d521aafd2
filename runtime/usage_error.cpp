#include "runtime/usage_error.h"

namespace zt {

void fail_usage(const std::string& message) { throw UsageError(message); }

}  // namespace zt
