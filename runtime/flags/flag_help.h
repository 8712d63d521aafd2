// `zerotune <command> --help`, written from the command's FlagTable (flag_table.h), the same for
// every command, train included.
#pragma once

#include <string>

#include "runtime/flags/flag_table.h"

namespace zt {

// The usage lines (the required flags, [options], the operands; then the table's other forms),
// the description, each shown group's flags with their help, aliases, accepted words and
// defaults (one entry each, laid out by runtime/terminal/help_entry.h), the notes.
std::string flags_help(const FlagTable& table);

}  // namespace zt
