// Levelled logging to stderr with a rank prefix. The level comes from ZT_LOG_LEVEL
// (debug, info, warn, error; default info). Info and debug lines print on rank 0 only,
// unless ZT_LOG_ALL_RANKS=1, so N ranks do not print N copies of the same progress line.
#pragma once

#include <sstream>
#include <string>

namespace zt::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

Level level();
void set_level(Level level);
Level parse_level(const std::string& name);  // throws zt::Error naming the accepted levels
bool enabled(Level level);
void write(Level level, const std::string& message);

// "[zerotune rank 1/4 W]" style prefix used by write(); exposed for tests.
std::string prefix(Level level);

}  // namespace zt::log

#define ZT_LOG(level_name, stream_expr)                                    \
  do {                                                                     \
    if (::zt::log::enabled(::zt::log::Level::level_name)) {                \
      std::ostringstream zt_log_stream;                                    \
      zt_log_stream << stream_expr;                                        \
      ::zt::log::write(::zt::log::Level::level_name, zt_log_stream.str()); \
    }                                                                      \
  } while (0)

#define ZT_DEBUG(x) ZT_LOG(kDebug, x)
#define ZT_INFO(x) ZT_LOG(kInfo, x)
#define ZT_WARN(x) ZT_LOG(kWarn, x)
#define ZT_ERROR(x) ZT_LOG(kError, x)
