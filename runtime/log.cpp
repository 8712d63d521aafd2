#include "runtime/log.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "runtime/enum_names.h"
#include "runtime/error.h"
#include "runtime/rank.h"

namespace zt::log {
namespace {

Level level_from_environment() {
  const char* value = std::getenv("ZT_LOG_LEVEL");
  if (value == nullptr || *value == '\0') return Level::kInfo;
  try {
    return parse_level(value);
  } catch (const Error& e) {
    std::cerr << "[zerotune W] ignoring ZT_LOG_LEVEL: " << e.what() << "\n";
    return Level::kInfo;
  }
}

std::atomic<int>& level_storage() {
  static std::atomic<int> storage{static_cast<int>(level_from_environment())};
  return storage;
}

bool all_ranks_print() {
  const char* value = std::getenv("ZT_LOG_ALL_RANKS");
  return value != nullptr && std::string(value) == "1";
}

constexpr EnumName<Level> kLevelNames[] = {
    {Level::kDebug, "debug"}, {Level::kInfo, "info"}, {Level::kWarn, "warn"}, {Level::kError, "error"}};

// A log line's letter: its level's initial, capitalised (D, I, W, E).
char level_letter(Level level) {
  return static_cast<char>(std::toupper(static_cast<unsigned char>(name_of(kLevelNames, level, "?")[0])));
}

}  // namespace

Level level() { return static_cast<Level>(level_storage().load()); }
void set_level(Level new_level) { level_storage() = static_cast<int>(new_level); }

Level parse_level(const std::string& name) {
  constexpr EnumName<Level> kAliases[] = {{Level::kWarn, "warning"}};
  return parse_name(kLevelNames, kAliases, name, "log level");
}

bool enabled(Level wanted) {
  if (wanted < level()) return false;
  if (wanted >= Level::kWarn) return true;
  return current_rank().rank == 0 || all_ranks_print();
}

std::string prefix(Level lvl) {
  const ProcessRank r = current_rank();
  std::string text = "[zerotune";
  if (r.distributed || r.world_size > 1) text += " rank " + std::to_string(r.rank) + "/" + std::to_string(r.world_size);
  text += ' ';
  text += level_letter(lvl);
  text += "] ";
  return text;
}

void write(Level lvl, const std::string& message) {
  static std::mutex output_mutex;
  std::string line = prefix(lvl) + message + "\n";
  std::lock_guard lock(output_mutex);
  std::cerr << line << std::flush;
}

}  // namespace zt::log
