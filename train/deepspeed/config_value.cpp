#include "train/deepspeed/config_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace zt::train {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// Python's rule for digit separators: single underscores between characters, none at the ends.
std::optional<std::string> without_underscores(const std::string& text) {
  if (text.find('_') == std::string::npos || text.front() == '_' || text.back() == '_' ||
      text.find("__") != std::string::npos)
    return std::nullopt;
  std::string out;
  std::copy_if(text.begin(), text.end(), std::back_inserter(out), [](char c) { return c != '_'; });
  return out;
}

std::optional<std::int64_t> parse_integer(const std::string& text) {
  const std::size_t digits = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (text.size() == digits || !std::all_of(text.begin() + digits, text.end(), is_digit)) return std::nullopt;
  std::int64_t value = 0;
  const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
  const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// pydantic-core's str_as_int: an integer, then one with a fraction of zeros ("5.000"), then
// one with digit separators.
std::optional<std::int64_t> integer_string(const std::string& text) {
  if (auto value = parse_integer(text)) return value;
  if (const std::size_t dot = text.find('.'); dot != std::string::npos) {
    if (std::all_of(text.begin() + dot + 1, text.end(), [](char c) { return c == '0'; }))
      return parse_integer(text.substr(0, dot));
    return std::nullopt;
  }
  if (auto stripped = without_underscores(text)) return parse_integer(*stripped);
  return std::nullopt;
}

std::optional<double> parse_float(const std::string& text) {
  const bool plus = !text.empty() && text[0] == '+';
  const std::string body = plus ? text.substr(1) : text;
  if (body.empty() || (plus && (body[0] == '+' || body[0] == '-'))) return std::nullopt;
  double value = 0.0;
  const auto [end, error] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (error != std::errc() || end != body.data() + body.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::int64_t> whole_number(const nlohmann::json& value) {
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<std::int64_t>();
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(number);
  }
  if (!value.is_number_float()) return std::nullopt;
  const double number = value.get<double>();
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (!std::isfinite(number) || std::trunc(number) != number || number < -kLimit || number >= kLimit)
    return std::nullopt;
  return static_cast<std::int64_t>(number);
}

std::optional<std::int64_t> lax_int(const nlohmann::json& value) {
  if (value.is_string()) return integer_string(value.get<std::string>());
  return whole_number(value);
}

std::optional<double> lax_float(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  if (!value.is_string()) return std::nullopt;
  const std::string text = value.get<std::string>();
  if (auto number = parse_float(text)) return number;
  if (auto stripped = without_underscores(text)) return parse_float(*stripped);
  return std::nullopt;
}

std::optional<bool> lax_bool(const nlohmann::json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (auto number = whole_number(value); number && (*number == 0 || *number == 1)) return *number == 1;
  if (!value.is_string()) return std::nullopt;
  const std::string word = lowercase(value.get<std::string>());
  for (const char* no : {"0", "f", "n", "no", "off", "false"})
    if (word == no) return false;
  for (const char* yes : {"1", "t", "y", "on", "yes", "true"})
    if (word == yes) return true;
  return std::nullopt;
}

}  // namespace zt::train
