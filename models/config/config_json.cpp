#include "models/config/config_json.h"

#include <cmath>
#include <cstdint>

#include "runtime/error.h"

namespace zt::models::detail {

ConfigKeys::ConfigKeys(const nlohmann::ordered_json& json, std::string source)
    : json_(json), source_(std::move(source)) {
  if (!json_.is_object()) zt::fail(source_ + ": expected a JSON object, got " + std::string(json_.type_name()));
}

const nlohmann::ordered_json& ConfigKeys::value(const std::string& key) const { return json_.at(key); }

bool ConfigKeys::has(const std::string& key) const { return json_.contains(key) && !json_.at(key).is_null(); }

bool ConfigKeys::is_null(const std::string& key) const { return json_.contains(key) && json_.at(key).is_null(); }

void ConfigKeys::fail(const std::string& message) const { zt::fail(source_ + ": " + message); }

void ConfigKeys::wrong_type(const std::string& key, const char* expected) const {
  fail("key '" + key + "' must be " + expected + ", got " + value(key).dump());
}

void ConfigKeys::require_positive(const std::string& key, std::int64_t value) const {
  if (value <= 0) fail("key '" + key + "' must be positive, got " + std::to_string(value));
}

void ConfigKeys::require_size(const std::string& key, std::int64_t value) const {
  require_positive(key, value);
  if (value > kMaxSize)
    fail("key '" + key + "' is " + std::to_string(value) + ", more than any model has (at most " +
         std::to_string(kMaxSize) + ")");
}

std::int64_t ConfigKeys::integer(const std::string& key, std::int64_t fallback) const {
  if (!has(key)) return fallback;
  return integer_value(key, value(key));
}

std::int64_t ConfigKeys::integer_value(const std::string& key, const nlohmann::ordered_json& v) const {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63: the first double past int64
  const bool whole_float = v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
  if (!v.is_number_integer() && !whole_float) wrong_type(key, "an integer");
  if ((v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{INT64_MAX}) ||
      (whole_float && !(std::fabs(v.get<double>()) < kLimit)))
    fail("key '" + key + "' is out of range, got " + v.dump());
  // Some writers store whole numbers as floats (2048.0).
  return whole_float ? static_cast<std::int64_t>(v.get<double>()) : v.get<std::int64_t>();
}

double ConfigKeys::number(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  const auto& v = value(key);
  if (!v.is_number()) wrong_type(key, "a number");
  return v.get<double>();
}

bool ConfigKeys::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& v = value(key);
  if (!v.is_boolean()) wrong_type(key, "true or false");
  return v.get<bool>();
}

std::string ConfigKeys::string(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const auto& v = value(key);
  if (!v.is_string()) wrong_type(key, "a string");
  return v.get<std::string>();
}

std::optional<std::int64_t> ConfigKeys::optional_integer(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return integer(key, 0);
}

std::vector<std::int64_t> ConfigKeys::integer_list(const std::string& key) const {
  if (!has(key)) return {};
  const auto& v = value(key);
  if (v.is_number_integer()) return {integer_value(key, v)};
  if (!v.is_array()) wrong_type(key, "an integer or a list of integers");
  std::vector<std::int64_t> result;
  for (const auto& item : v) {
    if (!item.is_number_integer()) wrong_type(key, "an integer or a list of integers");
    result.push_back(integer_value(key, item));
  }
  return result;
}

const nlohmann::ordered_json* ConfigKeys::object(const std::string& key) const {
  if (!has(key)) return nullptr;
  const auto& v = value(key);
  if (!v.is_object()) wrong_type(key, "an object");
  return &v;
}

}  // namespace zt::models::detail
