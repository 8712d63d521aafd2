// The table behind parse_training_arguments: each honoured flag's name, the member it sets,
// the values it accepts and a line of help; the names accepted without a member are in
// other_arguments.h. train_flag_table() makes both the flags of the grammar every command is
// read by (runtime/flags/), which the reader and --help go through.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/flags/flag_table.h"
#include "train/args/training_arguments.h"

namespace zt::train {

using ArgumentMember =
    std::variant<bool TrainingArguments::*, std::int64_t TrainingArguments::*, double TrainingArguments::*,
                 std::string TrainingArguments::*, std::optional<bool> TrainingArguments::*,
                 std::optional<std::int64_t> TrainingArguments::*, std::optional<double> TrainingArguments::*,
                 IntervalStrategy TrainingArguments::*, FinetuningType TrainingArguments::*,
                 Overlong TrainingArguments::*, Padding TrainingArguments::*>;

struct ArgumentSpec {
  const char* name;
  ArgumentMember member;
  std::vector<std::string> choices;  // empty: any value of the member's type (an enum's: its names)
  const char* help;
  // A list (a string member): on the command line the words after the flag, joined by commas
  // as a file's list is; training_args.json records two or more as a list.
  bool list = false;
};

// The flags in the order and sections `zerotune train --help` shows them in.
struct ArgumentSection {
  const char* title;
  std::vector<ArgumentSpec> specs;
};
const std::vector<ArgumentSection>& argument_sections();
// Every honoured flag, section after section.
const std::vector<ArgumentSpec>& argument_table();
// The honoured flag `name` ("learning_rate"); nullptr for any other name.
const ArgumentSpec* find_argument_spec(const std::string& name);
// `spec`'s member of `args` as training_args.json records it (and --help shows its default).
nlohmann::ordered_json argument_json(const TrainingArguments& args, const ArgumentSpec& spec);

// `zerotune train`'s flags in the grammar of every command (runtime/flags/flag_table.h): the
// sections as groups of flags (each member's kind, choices, default and aliases), then the names
// accepted without a member as a hidden group, and LLaMA-Factory's `name=value` words
// (train_flag_table.cpp). Both the command line and an arguments file's names are read by it.
const FlagTable& train_flag_table();
// Appends one line per missing, out-of-range or conflicting argument to errors, and to
// args.warnings what a LLaMA-Factory file gives without effect.
void validate_training_arguments(TrainingArguments& args, std::vector<std::string>& errors);
// Appends why --optim `optim` is refused, unless it names zerotune's AdamW (optimizer_names.cpp).
void check_optimizer_name(const std::string& optim, std::vector<std::string>& errors);

// Older HF names that still work and the training scripts' names, mapped to the names they
// stand for (LLaMA-Factory's are in its table, other_arguments.h).
const std::vector<std::pair<std::string, std::string>>& argument_aliases();

}  // namespace zt::train
