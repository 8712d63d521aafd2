#include "runtime/flags/flag_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "runtime/error.h"
#include "runtime/usage_error.h"

namespace zt {

const Flag* FlagTable::find(const std::string& name) const {
  for (const FlagGroup& group : groups)
    for (const Flag& flag : group.flags)
      if (flag.name == name || std::find(flag.aliases.begin(), flag.aliases.end(), name) != flag.aliases.end())
        return &flag;
  return nullptr;
}

Flag flag_named(const std::vector<Flag>& declared, const std::string& name) {
  for (const Flag& flag : declared)
    if (flag.name == name) return flag;
  fail("no flag " + name + " is declared here");
}

std::optional<bool> flag_bool(const std::string& word) {
  std::string lower = word;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "true" || lower == "yes" || lower == "y" || lower == "t" || lower == "1") return true;
  if (lower == "false" || lower == "no" || lower == "n" || lower == "f" || lower == "0") return false;
  return std::nullopt;
}

namespace {

std::string choice_words(const std::vector<std::string>& accepted) {
  std::string words = accepted.front();
  for (std::size_t i = 1; i < accepted.size(); ++i) {
    words += i + 1 == accepted.size() ? " or " : ", ";
    words += accepted[i];
  }
  return words;
}

// Words another layer knows; a wrong one is still the command line's mistake.
void run_check(const Flag& flag, const std::string& value) {
  try {
    flag.check(value);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    fail_usage(flag.name + ": " + e.what());
  }
}

}  // namespace

void check_flag_value(const Flag& flag, const std::string& value) {
  const std::string& name = flag.name;
  switch (flag.kind) {
    case FlagKind::kBool:
      ZT_REQUIRE_USAGE(flag_bool(value), name + " takes true or false, got '" + value + "'");
      break;
    case FlagKind::kText:
    case FlagKind::kList:
      break;
    case FlagKind::kNumber:
      number_flag(name, value);
      break;
    case FlagKind::kPositiveNumber:
      ZT_REQUIRE_USAGE(number_flag(name, value) > 0, name + " must be above 0, got '" + value + "'");
      break;
    case FlagKind::kInteger:
      integer_flag(name, value);
      break;
    case FlagKind::kPositiveInteger:
      ZT_REQUIRE_USAGE(integer_flag(name, value) > 0, name + " must be a positive whole number, got '" + value + "'");
      break;
    case FlagKind::kChoice:
      if (std::find(flag.choices.begin(), flag.choices.end(), value) == flag.choices.end()) {
        // The check may know the word as another program's and say why it is refused.
        if (flag.check) run_check(flag, value);
        fail_usage(name + " takes " + choice_words(flag.choices) + ", got '" + value + "'");
      }
      break;
  }
  if (flag.check) run_check(flag, value);
}

double number_flag(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  fail_usage(flag + " must be a number, got '" + text + "'");
}

std::int64_t integer_flag(const std::string& flag, const std::string& text) {
  try {  // exact beyond a double's 53 bits
    std::size_t used = 0;
    const long long whole = std::stoll(text, &used);
    if (used == text.size()) return whole;
  } catch (const std::exception&) {
  }
  const double value = number_flag(flag, text);
  ZT_REQUIRE_USAGE(value == std::floor(value) && std::abs(value) < 9.0e15,
                   flag + " must be a whole number, got '" + text + "'");
  return static_cast<std::int64_t>(value);
}

void fail_with_flag_problems(const std::vector<std::string>& problems) {
  std::string message =
      problems.size() == 1 ? problems[0] : "the arguments have " + std::to_string(problems.size()) + " problems:";
  if (problems.size() > 1)
    for (const std::string& problem : problems) message += "\n  " + problem;
  fail_usage(message);
}

}  // namespace zt
