// Typed reading of one object of a JSON config file (a ds_config.json block): each read
// names the key's full path and the file in its error, and the keys never read are listed
// afterwards, so every key the program does not use can be warned about by name.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace zt::train {

class ConfigBlock {
 public:
  ConfigBlock(const nlohmann::json& node, std::string path, std::string source)
      : node_(node), path_(std::move(path)), source_(std::move(source)) {
    ZT_REQUIRE(node_.is_object(), where("") + " must be a JSON object, got " + node_.dump());
  }

  bool has(const std::string& key) const { return node_.contains(key); }

  // The value of `key` as T, or `fallback` when absent; a value of another type is an error.
  template <typename T>
  T get(const std::string& key, T fallback) {
    std::optional<T> value = find<T>(key);
    return value ? *value : fallback;
  }

  template <typename T>
  std::optional<T> find(const std::string& key) {
    used_.insert(key);
    if (!node_.contains(key) || node_.at(key).is_null()) return std::nullopt;
    const nlohmann::json& value = node_.at(key);
    if constexpr (std::is_same_v<T, bool>) {
      ZT_REQUIRE(value.is_boolean(), where(key) + " must be true or false, got " + value.dump());
    } else if constexpr (std::is_arithmetic_v<T>) {
      ZT_REQUIRE(value.is_number(), where(key) + " must be a number, got " + value.dump());
      if constexpr (std::is_integral_v<T>) {
        const double number = value.get<double>();
        ZT_REQUIRE(number == static_cast<double>(static_cast<T>(number)),
                   where(key) + " must be a whole number, got " + value.dump());
        return static_cast<T>(number);
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      ZT_REQUIRE(value.is_string(), where(key) + " must be a string, got " + value.dump());
    }
    return value.get<T>();
  }

  // A nested object, read the same way; an absent key gives an empty block.
  ConfigBlock child(const std::string& key) {
    used_.insert(key);
    static const nlohmann::json empty = nlohmann::json::object();
    return ConfigBlock(node_.contains(key) ? node_.at(key) : empty, path_.empty() ? key : path_ + "." + key, source_);
  }

  // Marks a key as known but not used, with the reason; it gets its own warning.
  void ignore(const std::string& key, const std::string& reason, std::vector<std::string>& warnings) {
    used_.insert(key);
    if (node_.contains(key)) warnings.push_back(where(key) + " " + reason + "; ignored");
  }

  // One warning per key of this block that was never read.
  void warn_unused(std::vector<std::string>& warnings) const {
    for (const auto& [key, value] : node_.items())
      if (!used_.count(key)) warnings.push_back(where(key) + " is not used by zerotune; ignored");
  }

  std::string where(const std::string& key) const {
    std::string full = path_.empty() ? key : key.empty() ? path_ : path_ + "." + key;
    return source_ + ": " + full;
  }

 private:
  const nlohmann::json& node_;
  std::string path_;
  std::string source_;
  std::set<std::string> used_;
};

}  // namespace zt::train
