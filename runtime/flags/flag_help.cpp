#include "runtime/flags/flag_help.h"

#include "runtime/terminal/help_entry.h"

namespace zt {
namespace {

// "--name VALUE" as the usage line and a help entry show a flag.
std::string flag_with_value(const Flag& flag) {
  if (flag.kind == FlagKind::kBool || flag.value.empty()) return flag.name;
  return flag.name + " " + flag.value;
}

std::string usage_lines(const FlagTable& table) {
  const std::string command = "zerotune " + table.command;
  std::string line = "usage: " + command;
  for (const std::string& name : table.required) line.append(" ").append(flag_with_value(*table.find(name)));
  if (!table.one_of.empty()) {
    line += " (";
    for (std::size_t i = 0; i < table.one_of.size(); ++i)
      line.append(i == 0 ? "" : " | ").append(flag_with_value(*table.find(table.one_of[i])));
    line += ")";
  }
  line += " [options]";
  if (!table.operands.empty()) line.append(" ").append(table.operands);
  line += "\n";
  for (const std::string& usage : table.usages)
    line.append("       ").append(command).append(" ").append(usage) += "\n";
  return line;
}

std::string flag_entry(const Flag& flag) {
  std::string help = flag.help;
  if (!flag.aliases.empty()) {
    help += " (also";
    for (std::size_t i = 0; i < flag.aliases.size(); ++i) help.append(i == 0 ? " " : ", ").append(flag.aliases[i]);
    help += ")";
  }
  const bool listed = flag.kind == FlagKind::kChoice;
  std::string head = "  ";
  head += listed ? flag.name : flag_with_value(flag);
  return help_entry(head, listed ? flag.choices : std::vector<std::string>{}, help, flag.default_value);
}

}  // namespace

std::string flags_help(const FlagTable& table) {
  std::string out = usage_lines(table);
  out.append("\n").append(table.description);
  bool has_boolean = false;
  for (const FlagGroup& group : table.groups) {
    if (group.hidden) continue;
    out.append("\n").append(group.title).append(":\n");
    for (const Flag& flag : group.flags) {
      out += flag_entry(flag);
      has_boolean = has_boolean || flag.kind == FlagKind::kBool;
    }
  }
  out += has_boolean
             ? "\nBooleans take --flag, --flag true or --flag false; a value may also follow '=' (--name=value).\n"
             : "\nA value may also follow '=' (--name=value).\n";
  return out + table.notes;
}

}  // namespace zt
