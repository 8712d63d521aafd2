// "Did you mean": the known name a mistyped one most likely stands for, by edit distance.
// Used for unknown flags, arguments-file keys and DeepSpeed config keys alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace zt {

// Levenshtein distance: insertions, deletions and substitutions of one byte each.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest `name`, when it is near enough to be a likely typo (at most a third
// of the name's length plus one edits away); nullopt when none is, or `name` is a candidate.
std::optional<std::string> closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace zt
