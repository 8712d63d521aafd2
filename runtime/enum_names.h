// Enum <-> name tables written once. A table is a constexpr array of {value, name} pairs beside
// the enum's code; name_of, find_value and parse_name read it, and parse_name's error lists
// the accepted names, so a new value is added in one place and every name and message follows.
//
//   constexpr EnumName<Level> kLevelNames[] = {{Level::kDebug, "debug"}, {Level::kInfo, "info"}};
//   name_of(kLevelNames, Level::kInfo) == "info"
//   parse_name(kLevelNames, "loud", "log level") throws "unknown log level 'loud'; use one of debug, info"
//
// Code generic over enums (the argument tables of train/args/) finds a table through the enum's
// type instead: beside the enum, `constexpr const auto& enum_names(Level) { return kLevelNames; }`,
// and then name_of(Level::kInfo), enum_from_name<Level>("info") and enum_name_list<Level>().
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/error.h"

namespace zt {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The first name the table gives `value`; `missing` where it has none.
template <typename E, std::size_t N>
constexpr const char* name_of(const EnumName<E> (&table)[N], E value, const char* missing = "unknown") {
  for (const EnumName<E>& entry : table)
    if (entry.value == value) return entry.name;
  return missing;
}

template <typename E, std::size_t N>
constexpr std::optional<E> find_value(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& entry : table)
    if (name == entry.name) return entry.value;
  return std::nullopt;
}

// The table's names in order, joined: "debug, info, warn, error".
template <typename E, std::size_t N>
std::string names_of(const EnumName<E> (&table)[N], std::string_view separator = ", ") {
  std::string list;
  for (const EnumName<E>& entry : table) {
    if (!list.empty()) list += separator;
    list += entry.name;
  }
  return list;
}

// The value `name` names; else throws "unknown <what> '<name>'; use one of <the names>".
template <typename E, std::size_t N>
E parse_name(const EnumName<E> (&table)[N], std::string_view name, std::string_view what) {
  if (std::optional<E> value = find_value(table, name)) return *value;
  std::string message = "unknown ";
  message += what;
  message += " '";
  message += name;
  message += "'; use one of ";
  throw Error(message + names_of(table));
}

// The same, where `aliases` holds further spellings the error does not list ("fp32", "warning").
template <typename E, std::size_t N, std::size_t M>
E parse_name(const EnumName<E> (&table)[N], const EnumName<E> (&aliases)[M], std::string_view name,
             std::string_view what) {
  if (std::optional<E> value = find_value(aliases, name)) return *value;
  return parse_name(table, name, what);
}

// The forms keyed by the enum's type, through its `enum_names(E)` (found beside the enum).
template <typename E>
requires std::is_enum_v<E>
const char* name_of(E value) { return name_of(enum_names(value), value, ""); }

template <typename E>
requires std::is_enum_v<E> std::optional<E> enum_from_name(std::string_view name) {
  return find_value(enum_names(E{}), name);
}

// Every name in the table's order, for the choices a flag lists.
template <typename E>
requires std::is_enum_v<E> std::vector<std::string> enum_name_list() {
  std::vector<std::string> names;
  for (const EnumName<E>& entry : enum_names(E{})) names.emplace_back(entry.name);
  return names;
}

}  // namespace zt
