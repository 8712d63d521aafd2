#include "runtime/flags/flag_words.h"

#include <optional>

#include "runtime/terminal/closest_name.h"

namespace zt {
namespace {

bool is_flag_word(const std::string& word) { return word.rfind("--", 0) == 0; }

// LLaMA-Factory's `name=value`, where the table takes it.
bool is_name_value_word(const std::string& word, const FlagTable& table) {
  const std::size_t eq = word.find('=');
  return table.name_value_words && eq != std::string::npos && eq > 0 && word[0] != '-';
}

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

}  // namespace

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
  std::optional<std::string> closest = closest_name(name.substr(is_flag_word(name) ? 2 : 0), known);
  std::string message = "unknown option '" + name + "'";
  if (closest) message += " (did you mean --" + *closest + "?)";
  return message + "; see `" + command + " --help`";
}

std::vector<GivenFlag> read_flag_words(const std::vector<std::string>& args, const FlagTable& table,
                                       std::vector<std::string>& problems) {
  std::vector<GivenFlag> given;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    const std::size_t eq = word.find('=');
    std::string name = word;
    std::optional<std::string> value;
    if (is_name_value_word(word, table)) {
      name = "--" + word.substr(0, eq);
      value = word.substr(eq + 1);
    } else if (!is_flag_word(word)) {
      given.push_back({.name = word});
      continue;
    } else if (eq != std::string::npos) {
      name = word.substr(0, eq);
      value = word.substr(eq + 1);
    }
    const bool next_is_value = i + 1 < args.size() && !is_flag_word(args[i + 1]);
    const Flag* flag = table.find(name);
    if (flag == nullptr) {
      problems.push_back(unknown_flag_message(name, table));
      if (!value && next_is_value) ++i;  // its value, which is no operand
      continue;
    }
    GivenFlag read{.name = name, .flag = flag, .name_value_word = is_name_value_word(word, table)};
    if (value) {
      read.value = *value;
    } else if (flag->kind == FlagKind::kBool) {
      read.value = next_is_value && flag_bool(args[i + 1]) ? args[++i] : "true";
    } else if (!next_is_value) {
      problems.push_back("option " + name + " needs a value");
      continue;
    } else if (flag->kind == FlagKind::kList) {
      while (i + 1 < args.size() && !is_flag_word(args[i + 1]) && !is_name_value_word(args[i + 1], table))
        read.words.push_back(args[++i]);
      for (const std::string& item : read.words) read.value.append(read.value.empty() ? "" : ",").append(item);
    } else {
      read.value = args[++i];
    }
    given.push_back(std::move(read));
  }
  return given;
}

bool GivenFlag::unsets() const {
  return name_value_word && (value == "null" || value == "Null" || value == "NULL" || value == "~");
}

}  // namespace zt
