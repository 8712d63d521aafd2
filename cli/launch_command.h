// `zerotune launch`'s command line, read once by its flag table (torchrun's names and their '-'
// spellings) into the launcher's options (distributed/launch/launcher.h).
#pragma once

#include <string>
#include <vector>

#include "distributed/launch/launcher.h"

namespace zt::cli {

// The flags ahead of the command, read as every command's flags are (`--name value`,
// `--name=value`, each value checked by its kind, a flag not given as its default), up to the
// first word that is neither a flag nor a flag's value: that word and everything after it are
// the command, passed on untouched. A bad value names its flag; a missing command, a node rank
// outside the job or a port outside 1..65535 is refused too (zt::UsageError).
distributed::LaunchOptions read_launch_options(const std::vector<std::string>& args);

}  // namespace zt::cli
