// How a command line is read by its FlagTable (flag_table.h), the same for every command:
// `--name value`, `--name=value`, a boolean bare (`--flag`) or with its word (`--flag false`),
// a list's words (`--lora_target q_proj v_proj`), and, where the table takes them,
// LLaMA-Factory's `name=value` words. A value is the next word unless that starts with "--".
// What the values mean is the reader's: cli/flag_table.h keeps them as text by name,
// train/args/argument_reader.h sets TrainingArguments' members from them.
#pragma once

#include <string>
#include <vector>

#include "runtime/flags/flag_table.h"

namespace zt {

// One flag as the command line gives it, or a word that is no flag (an operand: `flag` null).
struct GivenFlag {
  std::string name;            // as written, without the value ("--per_gpu_train_batch_size")
  const Flag* flag = nullptr;  // the table's flag it stands for (an alias resolved)
  std::string value = {};      // a bare boolean's is "true"; a list's words joined by commas
  // A list given as words after its name (empty when its value came as one text).
  std::vector<std::string> words = {};
  // Written as LLaMA-Factory's `name=value`, whose value llamafactory-cli reads as YAML.
  bool name_value_word = false;

  // A `name=value` word whose value YAML reads as null (null, Null, NULL, ~): llamafactory-cli
  // (OmegaConf.from_cli) then unsets the option, as an arguments file's null leaves it unset.
  // `--name null` stays the text, as in HF's parser.
  bool unsets() const;
};

// `args` read by `table`, in order. An unknown flag (with the nearest name, the command's own
// flag for a name of LLaMA-Factory or of training, or why a removed flag went) and a flag
// without its value are appended to `problems`, and reading goes on.
std::vector<GivenFlag> read_flag_words(const std::vector<std::string>& args, const FlagTable& table,
                                       std::vector<std::string>& problems);

// Why `name` is not one of `table`'s flags, for the reader of a command line or an arguments file.
std::string unknown_flag_message(const std::string& name, const FlagTable& table);

}  // namespace zt
