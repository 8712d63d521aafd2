// One flag's entry in a command's --help, laid out the same for every command (train's table and
// the other commands' alike): the flag and its accepted words in the first kHelpColumn columns,
// the help wrapped to kHelpWidth beside it (below it when the flag is wider), the default last.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace zt {

inline constexpr std::size_t kHelpColumn = 34;
inline constexpr std::size_t kHelpWidth = 100;

// `head` ("  --name VALUE"), then ` {a,b}` for `choices` (argparse's way; when that would not fit
// a line the choices go into the help), `help` and ` [default_value]` when that is not empty.
std::string help_entry(std::string head, const std::vector<std::string>& choices, std::string help,
                       const std::string& default_value);

}  // namespace zt
