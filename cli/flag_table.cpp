#include "cli/flag_table.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>

#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/terminal/closest_name.h"
#include "runtime/terminal/help_entry.h"
#include "runtime/usage_error.h"
#include "text/chat_template/chat_template.h"

namespace zt::cli {

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

namespace {

// Names users bring from LLaMA-Factory or from training to a command that calls the thing
// otherwise: the error names the command's flag. (Where the meaning is the same, the command
// takes the name as an alias instead.)
struct ForeignName {
  const char* name;
  const char* what;        // completes "--name ..."
  const char* equivalent;  // the command's flag (and value) for it; it applies where the command has that flag
};

const ForeignName kForeignNames[] = {
    {"--dataset", "is LLaMA-Factory's name for datasets of dataset_info.json", "--validation_file FILE"},
    {"--eval_dataset", "is LLaMA-Factory's name for datasets of dataset_info.json", "--validation_file FILE"},
    {"--dataset", "is LLaMA-Factory's name for datasets of dataset_info.json", "--input_file FILE"},
    {"--infer_dtype", "is LLaMA-Factory's name", "--dtype"},
    {"--checkpoint_dir", "is older LLaMA-Factory's name for an adapter", "--adapter_name_or_path"},
    {"--bf16", "is a training flag", "--dtype bfloat16"},
    {"--fp16", "is a training flag", "--dtype float16"},
    {"--max_length", "counts the prompt too in transformers' generate", "--max_new_tokens"},
};

std::string unknown_flag_message(const std::string& name, const FlagTable& table) {
  const std::string command = "zerotune " + table.command;
  for (const RemovedFlag& removed : table.removed)
    if (name == removed.name) return name + " was removed: " + removed.reason + "; drop the flag";
  for (const ForeignName& foreign : kForeignNames) {
    const std::string equivalent = foreign.equivalent;
    if (name == foreign.name && table.find(equivalent.substr(0, equivalent.find(' '))))
      return name + " " + foreign.what + "; " + command + " takes " + equivalent;
  }
  std::vector<std::string> known;  // compared without the dashes every name has
  for (const FlagGroup& group : table.groups)
    for (const Flag& flag : group.flags) {
      known.push_back(flag.name.substr(2));
      for (const std::string& alias : flag.aliases) known.push_back(alias.substr(2));
    }
  std::optional<std::string> closest = closest_name(name.substr(name.rfind("--", 0) == 0 ? 2 : 0), known);
  std::string message = "unknown option '" + name + "'";
  if (closest) message += " (did you mean --" + *closest + "?)";
  return message + "; see `" + command + " --help`";
}

std::string choice_words(const std::vector<std::string>& accepted) {
  std::string words = accepted.front();
  for (std::size_t i = 1; i < accepted.size(); ++i) {
    words += i + 1 == accepted.size() ? " or " : ", ";
    words += accepted[i];
  }
  return words;
}

// A value flag's value, checked by its flag's kind.
void check_value(const Flag& flag, const std::string& value) {
  const std::string& name = flag.name;
  switch (flag.kind) {
    case FlagKind::kBool:
    case FlagKind::kText:
      return;
    case FlagKind::kNumber:
      number_flag(name, value);
      return;
    case FlagKind::kPositiveNumber:
      ZT_REQUIRE_USAGE(number_flag(name, value) > 0, name + " must be above 0, got '" + value + "'");
      return;
    case FlagKind::kInteger:
      integer_flag(name, value);
      return;
    case FlagKind::kPositiveInteger:
      ZT_REQUIRE_USAGE(integer_flag(name, value) > 0, name + " must be a positive whole number, got '" + value + "'");
      return;
    case FlagKind::kChoice:
      if (std::find(flag.choices.begin(), flag.choices.end(), value) == flag.choices.end())
        fail_usage(name + " takes " + choice_words(flag.choices) + ", got '" + value + "'");
      return;
    case FlagKind::kDevice:
    case FlagKind::kDtype:
    case FlagKind::kTemplate:
      break;
  }
  // Words other layers know; a wrong one is still the command line's mistake.
  try {
    if (flag.kind == FlagKind::kDevice) parse_device(value);
    if (flag.kind == FlagKind::kDtype) parse_dtype(value);
    if (flag.kind == FlagKind::kTemplate) models::make_chat_template(value);
  } catch (const Error& e) {
    fail_usage(name + ": " + e.what());
  }
}

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

// "--name VALUE" as the usage line and a help entry show a flag.
std::string flag_with_value(const Flag& flag) {
  if (flag.kind == FlagKind::kBool || flag.value.empty()) return flag.name;
  return flag.name + " " + flag.value;
}

std::string usage_line(const FlagTable& table) {
  std::string line = "usage: zerotune " + table.command;
  for (const std::string& name : table.required) line.append(" ").append(flag_with_value(*table.find(name)));
  if (!table.one_of.empty()) {
    line += " (";
    for (std::size_t i = 0; i < table.one_of.size(); ++i)
      line.append(i == 0 ? "" : " | ").append(flag_with_value(*table.find(table.one_of[i])));
    line += ")";
  }
  line += " [options]";
  if (!table.operands.empty()) line.append(" ").append(table.operands);
  return line + "\n";
}

std::string flag_entry(const Flag& flag) {
  std::string help = flag.help;
  if (!flag.aliases.empty()) {
    help += " (also";
    for (std::size_t i = 0; i < flag.aliases.size(); ++i) help += (i == 0 ? " " : ", ") + flag.aliases[i];
    help += ")";
  }
  const bool listed = flag.kind == FlagKind::kChoice;
  std::string head = "  ";
  head += listed ? flag.name : flag_with_value(flag);
  return help_entry(head, listed ? flag.choices : std::vector<std::string>{}, help, flag.default_value);
}

}  // namespace

Flags parse_flags(const std::vector<std::string>& args, const FlagTable& table) {
  Flags flags;
  for (const FlagGroup& group : table.groups)
    for (const Flag& flag : group.flags)
      if (!flag.default_value.empty()) flags.defaults[flag.name] = flag.default_value;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos && name.rfind("--", 0) == 0;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Flag* flag = table.find(name);
    if (flag == nullptr) fail_usage(unknown_flag_message(name, table));
    if (flag->kind == FlagKind::kBool) {
      if (!inline_value) {
        value = "true";
        if (i + 1 < args.size() && (args[i + 1] == "true" || args[i + 1] == "false")) value = args[++i];
      }
      ZT_REQUIRE_USAGE(value == "true" || value == "false", flag->name + " takes true or false, got '" + value + "'");
    } else {
      ZT_REQUIRE_USAGE(inline_value || i + 1 < args.size(), "option " + flag->name + " needs a value");
      if (!inline_value) value = args[++i];
      check_value(*flag, value);
    }
    flags[flag->name] = value;
  }
  check_required(flags, table);
  return flags;
}

std::string flags_help(const FlagTable& table) {
  std::string out = usage_line(table);
  out.append("\n").append(table.description);
  for (const FlagGroup& group : table.groups) {
    out.append("\n").append(group.title).append(":\n");
    for (const Flag& flag : group.flags) out += flag_entry(flag);
  }
  bool has_boolean = false;
  for (const FlagGroup& group : table.groups)
    for (const Flag& flag : group.flags) has_boolean = has_boolean || flag.kind == FlagKind::kBool;
  out += has_boolean
             ? "\nBooleans take --flag, --flag true or --flag false; a value may also follow '=' (--name=value).\n"
             : "\nA value may also follow '=' (--name=value).\n";
  return out + table.notes;
}

int run_with_flags(const std::vector<std::string>& args, const FlagTable& table,
                   const std::function<int(Flags&)>& body) {
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") {
      std::cout << flags_help(table);
      return 0;
    }
  Flags flags = parse_flags(args, table);
  return body(flags);
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
  const double value = number_flag(flag, text);
  ZT_REQUIRE_USAGE(value == std::floor(value) && std::abs(value) < 9.0e15,
                   flag + " must be a whole number, got '" + text + "'");
  return static_cast<std::int64_t>(value);
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
