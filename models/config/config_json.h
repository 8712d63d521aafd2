// Typed reads of config.json keys that name the file and the key when a value has the wrong
// type, so "hidden_size must be an integer" points at the line to fix. A key that is absent
// or null takes the given default, as transformers' config classes do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::models::detail {

class ConfigKeys {
 public:
  ConfigKeys(const nlohmann::ordered_json& json, std::string source);

  bool has(const std::string& key) const;      // present and not null
  bool is_null(const std::string& key) const;  // present and null (None in Python)
  std::int64_t integer(const std::string& key, std::int64_t fallback) const;
  double number(const std::string& key, double fallback) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  std::optional<std::int64_t> optional_integer(const std::string& key) const;
  // An integer or a list of integers (eos_token_id); empty when absent.
  std::vector<std::int64_t> integer_list(const std::string& key) const;
  // A nested object (rope_parameters), or nullptr when absent or null.
  const nlohmann::ordered_json* object(const std::string& key) const;

  // Throws zt::Error "<source>: <message>".
  [[noreturn]] void fail(const std::string& message) const;
  // Throws unless value > 0, naming the key.
  void require_positive(const std::string& key, std::int64_t value) const;
  // Throws unless 0 < value <= kMaxSize: a count of layers, heads or elements of a dimension.
  void require_size(const std::string& key, std::int64_t value) const;
  // No real model comes near it, and the products of sizes below it (q_size, a weight's
  // elements) fit in 64 bits.
  static constexpr std::int64_t kMaxSize = (std::int64_t{1} << 31) - 1;
  const std::string& source() const { return source_; }

 private:
  const nlohmann::ordered_json& value(const std::string& key) const;
  // `v` (the value of `key`, or an item of it) as an int64; whole floats count, and a value
  // beyond int64 is an error rather than a wrapped or undefined one.
  std::int64_t integer_value(const std::string& key, const nlohmann::ordered_json& v) const;
  [[noreturn]] void wrong_type(const std::string& key, const char* expected) const;

  const nlohmann::ordered_json& json_;
  std::string source_;
};

}  // namespace zt::models::detail
