#include "runtime/memory/memory_limit.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "runtime/ascii_lower.h"
#include "runtime/usage_error.h"

namespace zt {
namespace {

// Bytes per unit, or 0 for an unknown unit.
double unit_bytes(const std::string& unit) {
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1.0},    {"b", 1.0},      {"kb", 1e3},        {"mb", 1e6},           {"gb", 1e9},
      {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  for (const auto& [name, bytes] : kUnits)
    if (unit == name) return bytes;
  return 0.0;
}

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
  fail_usage(std::string(kMemoryLimitVariable) + "='" + text + "' " + why +
             "; write a size such as 24GiB or 512MiB, or a fraction of the GPU's memory such as 0.5");
}

}  // namespace

std::size_t parse_memory_limit(const std::string& text, std::size_t device_total) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number <= 0.0) refuse(text, "is not a positive size");
  std::string unit = ascii_lower(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  const bool fraction = unit.empty() && number < 1.0;
  const double bytes = fraction ? number * static_cast<double>(device_total) : number * unit_bytes(unit);
  if (!fraction && unit_bytes(unit) == 0.0) refuse(text, "has an unknown unit '" + unit + "'");
  if (bytes < 1.0) refuse(text, "leaves no memory to allocate");
  return static_cast<std::size_t>(bytes);
}

std::optional<std::size_t> memory_limit_from_environment(std::size_t device_total) {
  const char* value = std::getenv(kMemoryLimitVariable);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_memory_limit(value, device_total);
}

}  // namespace zt
