// What every target shares: the bytes as text, the parser's answer, where zt::Error is the
// expected rejection of malformed input (anything else escaping is a finding), and the check
// of what the parser promises about input it accepts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "runtime/error.h"

namespace zt::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// What parse() returns, or nothing when it rejects the input with zt::Error.
template <typename Parse>
auto accepted(Parse&& parse) -> std::optional<decltype(parse())> {
  try {
    return parse();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// A broken promise about accepted input is a finding: stop here, with the input kept.
inline void require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace zt::fuzz
