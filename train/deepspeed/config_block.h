// Typed reading of one object of a ds_config.json (a block), the way DeepSpeed reads that
// block: each read names the key's full path and the config in its error, and the keys never
// read are listed afterwards, to be noted or refused by name.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace zt::train {

enum class BlockKind {
  // DeepSpeed reads the block with dict.get, or passes it to a constructor as keyword
  // arguments: values are used as written, and an "auto" HF Trainer did not fill is an error.
  kAsWritten,
  // One of DeepSpeed's config models (DeepSpeedConfigModel, pydantic): an "auto" value is
  // dropped, leaving DeepSpeed's default, and values convert as pydantic's lax mode converts
  // them (config_value.h).
  kModel,
};

class ConfigBlock {
 public:
  ConfigBlock(const nlohmann::json& node, std::string path, std::string source, BlockKind kind);

  // The key's value as written, or null when it has none: absent, null, or an "auto" a model
  // drops. Reading it this way does not count as a read, but makes the key one the block
  // knows, which misspelled keys are compared with.
  const nlohmann::json* value_of(const std::string& key) const;
  bool has(const std::string& key) const { return value_of(key) != nullptr; }

  // The value of `key` as T (bool, int, std::int64_t, double, std::string or
  // std::vector<double>), or `fallback` when it has none; a value of another type is an error.
  template <typename T>
  T get(const std::string& key, T fallback) {
    std::optional<T> value = find<T>(key);
    return value ? *value : fallback;
  }

  template <typename T>
  std::optional<T> find(const std::string& key) {
    used_.insert(key);
    const nlohmann::json* value = value_of(key);
    if (value == nullptr) return std::nullopt;
    if constexpr (!std::is_same_v<T, std::string>) refuse_unfilled_auto(key, *value, expectation<T>());
    std::optional<T> converted = convert<T>(*value);
    if (!converted) fail(where(key) + " must be " + expectation<T>() + ", got " + value->dump());
    return converted;
  }

  // `get`, refusing a value below DeepSpeed's bound for the key (pydantic's ge).
  template <typename T>
  T get_at_least(const std::string& key, T fallback, T minimum) {
    const T value = get<T>(key, fallback);
    if (value < minimum)
      fail(where(key) + " must be >= " + std::to_string(minimum) + " (DeepSpeed's range), got " +
           value_of(key)->dump());
    return value;
  }

  // A field DeepSpeed takes under two names (pydantic's alias with populate_by_name): either
  // is read; both, holding different values, is an error.
  template <typename T>
  std::optional<T> find_either(const std::string& name, const std::string& alias) {
    std::optional<T> first = find<T>(name);
    std::optional<T> second = find<T>(alias);
    if (first && second && *first != *second)
      fail(where(name) + " = " + value_of(name)->dump() + " and " + path_of(alias) + " = " + value_of(alias)->dump() +
           " are one DeepSpeed setting under two names and disagree; keep one of them");
    return first ? first : second;
  }

  // A nested object, read the way `kind` says; an absent key gives an empty block.
  ConfigBlock child(const std::string& key, BlockKind kind);

  // A key DeepSpeed knows whose value changes nothing in zerotune's training: read as T
  // (so a value DeepSpeed would refuse is still refused) and otherwise left alone. A near
  // miss of such a key is only noted (note_unread): what it was meant to set changes nothing.
  template <typename T>
  void accept(const std::string& key) {
    find<T>(key);
    inert_.insert(key);
  }

  // A key DeepSpeed knows, of any shape, whose value changes nothing in zerotune's training.
  void accept_any(const std::string& key) {
    used_.insert(key);
    inert_.insert(key);
  }

  // A key DeepSpeed knows, of any shape, that matters here (a section's switch, which the
  // caller reads through value_of): counted as read, and a near miss of it is an error.
  void read_any(const std::string& key) {
    used_.insert(key);
    known_.insert(key);
  }

  // A key zerotune does not honour: one warning, with the reason, when it holds a value.
  void ignore(const std::string& key, const std::string& reason, std::vector<std::string>& warnings);

  // A key zerotune does not honour, warned about only when it asks for something other than
  // `inert` (DeepSpeed's default, or its off value).
  template <typename T>
  void ignore_unless(const std::string& key, T inert, const std::string& reason, std::vector<std::string>& warnings) {
    if (std::optional<T> value = find<T>(key); value && *value != inert)
      warnings.push_back(where(key) + " = " + value_of(key)->dump() + " " + reason + "; ignored");
  }

  // The keys never read, of a block DeepSpeed reads key by key and whose other keys it
  // ignores. A comment key (is_comment) passes silently. One a single edit (or only letter
  // case) away from a key that matters here, one zerotune honours, warns about or refuses, is
  // an error naming both, since ignoring it would run without what it was meant to set. Any
  // other is accepted with one note, "<key> <reason>; ignored", naming the known key it is
  // nearest to, if any.
  void note_unread(const std::string& reason, std::vector<std::string>& warnings) const;
  // One error naming every key never read but comments, which DeepSpeed refuses too (its
  // config models forbid other keys), each with the known key it most likely misspells:
  // `owner` is what they are not settings of ("DeepSpeed's fp16 block").
  void refuse_unknown(const std::string& owner) const;

  // A key written as a comment: starting with "_", "//" or "#", or containing "comment" in any
  // letter case ("_comment", "comment", "//", "#note"). Never an error, never a note.
  static bool is_comment(const std::string& key);

  // "source: full.path.key", for messages.
  std::string where(const std::string& key) const;
  std::string path_of(const std::string& key) const;

 private:
  std::vector<std::string> unread() const;  // the keys never read, comments left out
  // The known key `key` most likely misspells: the nearest of those read or asked for (every
  // reader asks for all the keys its block knows, present or not).
  std::optional<std::string> misspelled(const std::string& key) const;
  // The key that matters (known, and not accepted as changing nothing) one edit from `key`.
  std::optional<std::string> mistyped(const std::string& key) const;
  std::string with_suggestion(const std::string& key) const;  // "path.key (did you mean known?)"
  void refuse_unfilled_auto(const std::string& key, const nlohmann::json& value, const std::string& expected) const;

  template <typename T>
  static std::string expectation() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return "a whole number";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_same_v<T, std::vector<double>>) return "a list of numbers";
  }

  template <typename T>
  std::optional<T> convert(const nlohmann::json& value) const {
    if constexpr (std::is_same_v<T, bool>) return to_bool(value);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      std::optional<std::int64_t> number = to_int(value);
      if (!number || *number < std::numeric_limits<T>::min() || *number > std::numeric_limits<T>::max())
        return std::nullopt;
      return static_cast<T>(*number);
    }
    if constexpr (std::is_floating_point_v<T>) return to_double(value);
    if constexpr (std::is_same_v<T, std::string>) return to_string(value);
    if constexpr (std::is_same_v<T, std::vector<double>>) return to_numbers(value);
  }

  std::optional<bool> to_bool(const nlohmann::json& value) const;
  std::optional<std::int64_t> to_int(const nlohmann::json& value) const;
  std::optional<double> to_double(const nlohmann::json& value) const;
  static std::optional<std::string> to_string(const nlohmann::json& value);
  std::optional<std::vector<double>> to_numbers(const nlohmann::json& value) const;

  const nlohmann::json& node_;
  std::string path_;
  std::string source_;
  BlockKind kind_;
  std::set<std::string> used_;
  std::set<std::string> inert_;          // keys accepted as changing nothing in zerotune
  mutable std::set<std::string> known_;  // every key asked for
};

}  // namespace zt::train
