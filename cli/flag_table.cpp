#include "cli/flag_table.h"

#include <algorithm>
#include <iostream>

#include "runtime/error.h"
#include "runtime/flags/flag_words.h"
#include "runtime/usage_error.h"
#include "train/args/training_arguments.h"

namespace zt::cli {
namespace {

void check_required(const Flags& flags, const FlagTable& table) {
  const std::string see = "; see `zerotune " + table.command + " --help`";
  for (const std::string& required : table.required)
    ZT_REQUIRE_USAGE(flags.count(required), "missing " + required + see);
  if (table.one_of.empty()) return;
  const auto given = std::count_if(table.one_of.begin(), table.one_of.end(),
                                   [&](const std::string& name) { return flags.count(name) > 0; });
  std::string names;
  for (const std::string& name : table.one_of) names.append(names.empty() ? "" : " or ").append(name);
  ZT_REQUIRE_USAGE(given == 1, "give exactly one of " + names + see);
}

// A word that is no flag. LLaMA-Factory's users write `llamafactory-cli export merge.yaml` (and
// chat, ...): such a file is named as what it is, not as an unknown option.
std::string operand_message(const std::string& word, const FlagTable& table) {
  if (!train::arguments_file_format(word)) return unknown_flag_message(word, table);
  return "'" + word + "' is an arguments file, which only zerotune train reads: give zerotune " + table.command +
         " its settings as flags (--model_name_or_path DIR, ...), with the names `zerotune " + table.command +
         " --help` lists";
}

}  // namespace

Flags parse_flags(const std::vector<std::string>& args, const FlagTable& table) {
  Flags flags;
  for (const FlagGroup& group : table.groups)
    for (const Flag& flag : group.flags)
      if (!flag.default_value.empty()) flags.defaults[flag.name] = flag.default_value;
  std::vector<std::string> problems;
  const std::vector<GivenFlag> given = read_flag_words(args, table, problems);
  for (const GivenFlag& word : given)
    if (word.flag == nullptr) problems.push_back(operand_message(word.name, table));  // no command takes operands here
  if (!problems.empty()) fail_with_flag_problems(problems);
  for (const GivenFlag& word : given) {
    check_flag_value(*word.flag, word.value);
    const bool boolean = word.flag->kind == FlagKind::kBool;
    flags[word.flag->name] = boolean ? (*flag_bool(word.value) ? "true" : "false") : word.value;
  }
  check_required(flags, table);
  return flags;
}

bool asks_for_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& arg) { return arg == "--help" || arg == "-h"; });
}

int run_with_flags(const std::vector<std::string>& args, const FlagTable& table,
                   const std::function<int(Flags&)>& body) {
  if (asks_for_help(args)) {
    std::cout << flags_help(table);
    return 0;
  }
  Flags flags = parse_flags(args, table);
  return body(flags);
}

std::int64_t integer_flag_or(const Flags& flags, const std::string& name, std::int64_t fallback) {
  return flags.count(name) ? integer_flag(name, flags.at(name)) : fallback;
}

std::string Flags::text(const std::string& name) const {
  if (const auto given = find(name); given != end()) return given->second;
  const auto fallback = defaults.find(name);
  return fallback == defaults.end() ? "" : fallback->second;
}

bool Flags::is_true(const std::string& name) const { return text(name) == "true"; }

std::int64_t Flags::integer(const std::string& name) const {
  const std::string value = text(name);
  if (value.empty()) fail(name + " has no value and no default");
  return integer_flag(name, value);
}

double Flags::number(const std::string& name) const {
  const std::string value = text(name);
  if (value.empty()) fail(name + " has no value and no default");
  return number_flag(name, value);
}

}  // namespace zt::cli
