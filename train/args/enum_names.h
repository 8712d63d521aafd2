// Arguments whose value is one of a few names, held as enums: each enum declares
// `enum_names(E)`, its values with the names the flag takes and training_args.json records,
// beside the argument that owns it; these helpers parse and print through that table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zt::train {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value`, as its flag takes it.
template <typename E>
const char* name_of(E value) {
  for (const auto& [candidate, name] : enum_names(value))
    if (candidate == value) return name;
  return "";
}

// The value called `name`; nullopt when none is.
template <typename E>
std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& [value, candidate] : enum_names(E{}))
    if (name == candidate) return value;
  return std::nullopt;
}

// Every name, in the table's order, for messages that list what is accepted.
template <typename E>
std::vector<std::string> enum_name_list() {
  std::vector<std::string> names;
  for (const auto& entry : enum_names(E{})) names.emplace_back(entry.name);
  return names;
}

}  // namespace zt::train
