// An arguments file given to export, chat, generate, evaluate or serve, as `llamafactory-cli
// export|chat|api FILE.yaml` takes LLaMA-Factory's examples/merge_lora and examples/inference
// files. The file is read as train reads one (train/args/training_arguments.h); each name is
// looked up in the command's FlagTable, LLaMA-Factory's names being its flags' aliases, and its
// value becomes that flag's, checked by the flag's kind; the flags after the file override it,
// as they override train's (`--name value`, or LLaMA-Factory's `name=value`). LLaMA-Factory's other options are judged
// as train judges them (train/args/other_arguments.h): without effect (one warning) or refused, naming the feature.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/flags/flag_words.h"

namespace zt::cli {

struct ArgumentsFile {
  std::string path;
  std::vector<GivenFlag> flags = {};       // the file's names that are the command's flags, by name
  std::vector<std::string> warnings = {};  // its names without effect, one line each
};

// The arguments file `args` starts with, read for `table`'s command; nullopt when the first word
// names none. Each problem (an unknown name, a refused option) is appended to `problems`,
// prefixed with the file's path.
std::optional<ArgumentsFile> read_arguments_file(const std::vector<std::string>& args, const FlagTable& table,
                                                 std::vector<std::string>& problems);

}  // namespace zt::cli
