// How every command but train reads the flags its FlagTable declares (the one grammar of every
// command: runtime/flags/flag_table.h, which train's arguments are read by too): each given
// flag's value checked by its kind and kept as text by the flag's name, the table's defaults
// beside them, and --help written from the table. Flags several commands take (the model's,
// the sampling flags) are declared once and shared.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/flags/flag_help.h"
#include "runtime/flags/flag_table.h"

namespace zt::cli {

// Every given flag by its name (an alias's by the flag's name; booleans as "true"/"false"), and
// the table's defaults, which the typed reads fall back on: a default lives in the table alone.
class Flags : public std::map<std::string, std::string> {
 public:
  // --name as given, else its default, else empty.
  std::string text(const std::string& name) const;
  // Whether the boolean --name is true, as given or by default (no default: false).
  bool is_true(const std::string& name) const;
  // --name's whole number, as given or by default; a flag with neither is a bug.
  std::int64_t integer(const std::string& name) const;
  // --name's number, as given or by default; a flag with neither is a bug.
  double number(const std::string& name) const;

  std::map<std::string, std::string> defaults;
  // The arguments file the flags came from (cli/arguments_file.h), before the command line's
  // flags; empty when there was none.
  std::string arguments_file;
};

// Every flag of `args` by name: an arguments file's first when `args` starts with one
// (cli/arguments_file.h), then the command line's, which override them (after a file also as
// LLaMA-Factory's `name=value`). A word that is no flag, an unknown flag
// (runtime/flags/flag_words.h says how it is answered), a missing value, a value not of the flag's kind, or a missing
// required flag throws zt::UsageError naming the flag.
Flags parse_flags(const std::vector<std::string>& args, const FlagTable& table);

// Whether --help (or -h) is among `args`, anywhere: every command then prints its help alone.
bool asks_for_help(const std::vector<std::string>& args);

// A command's whole run: --help (or -h) prints flags_help; otherwise `body` runs with the parsed
// flags (a flag error is a zt::UsageError, which the CLI exits with code 2 for).
int run_with_flags(const std::vector<std::string>& args, const FlagTable& table,
                   const std::function<int(Flags&)>& body);

// The whole number --name holds, or `fallback` when it is not given (for a default that is
// not one value, such as the visible GPUs).
std::int64_t integer_flag_or(const Flags& flags, const std::string& name, std::int64_t fallback);

}  // namespace zt::cli
