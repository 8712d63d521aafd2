#include "runtime/terminal/closest_name.h"

#include <algorithm>

namespace zt {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::optional<std::string> closest;
  std::size_t best = name.size() / 3 + 2;  // beyond that a suggestion is noise
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(name, candidate);
    if (distance == 0) return std::nullopt;
    if (distance < best) best = distance, closest = candidate;
  }
  return closest;
}

}  // namespace zt
