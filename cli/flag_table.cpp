#include "cli/flag_table.h"

#include <algorithm>
#include <iostream>

#include "cli/arguments_file.h"
#include "runtime/error.h"
#include "runtime/flags/flag_words.h"
#include "runtime/log.h"
#include "runtime/rank.h"
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

// A word that is no flag: an arguments file anywhere but first is named as one, and so is an
// override (`name=value`) with no file before it.
std::string operand_message(const std::string& word, const FlagTable& table) {
  const std::size_t eq = word.find('=');
  if (eq != std::string::npos && eq > 0 && table.find("--" + word.substr(0, eq)))
    return "'" + word + "': LLaMA-Factory's name=value overrides an arguments file given first; without one write --" +
           word.substr(0, eq) + " " + word.substr(eq + 1);
  if (!train::arguments_file_format(word)) return unknown_flag_message(word, table);
  return "'" + word +
         "' is an arguments file: it comes first, before the flags that override it, and only one is "
         "read: zerotune " +
         table.command + " FILE.yaml|FILE.json [--name value | name=value ...]";
}

// Sets `given`'s value, checked by its flag's kind; a file's wrong value names the file.
void set_flag(Flags& flags, const GivenFlag& given, const std::string& source) {
  try {
    check_flag_value(*given.flag, given.value);
  } catch (const UsageError& e) {
    if (source.empty()) throw;
    throw UsageError(source + ": " + e.what());
  }
  const bool boolean = given.flag->kind == FlagKind::kBool;
  flags[given.flag->name] = boolean ? (*flag_bool(given.value) ? "true" : "false") : given.value;
}

// As train's: rank 0 alone speaks for the job.
void log_warnings(const std::vector<std::string>& warnings) {
  if (current_rank().rank != 0) return;
  for (const std::string& warning : warnings) ZT_LOG(kWarn, warning);
}

}  // namespace

Flags parse_flags(const std::vector<std::string>& args, const FlagTable& table) {
  Flags flags;
  for (const FlagGroup& group : table.groups)
    for (const Flag& flag : group.flags)
      if (!flag.default_value.empty()) flags.defaults[flag.name] = flag.default_value;
  std::vector<std::string> problems;
  const std::optional<ArgumentsFile> file = read_arguments_file(args, table, problems);
  const std::vector<std::string> words(args.begin() + (file ? 1 : 0), args.end());
  // After a file, LLaMA-Factory's `name=value` words override it too: `llamafactory-cli chat|export
  // FILE.yaml template=qwen` merges them over the file, as train's overrides do.
  FlagTable word_table = table;
  word_table.name_value_words = table.name_value_words || file.has_value();
  const std::vector<GivenFlag> given = read_flag_words(words, word_table, problems);
  for (const GivenFlag& word : given)
    if (word.flag == nullptr) problems.push_back(operand_message(word.name, table));  // no command takes operands here
  if (!problems.empty()) fail_with_flag_problems(problems);
  if (file) {
    flags.arguments_file = file->path;
    for (const GivenFlag& word : file->flags) set_flag(flags, word, file->path);
  }
  for (const GivenFlag& word : given) {  // after the file's: they override it
    if (word.unsets())
      flags.erase(word.flag->name);  // adapter_name_or_path=null: as the file's null
    else
      set_flag(flags, word, "");
  }
  check_required(flags, table);
  if (file) log_warnings(file->warnings);
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
