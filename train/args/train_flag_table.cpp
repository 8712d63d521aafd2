// zerotune train's flags as the grammar of every command reads them and --help shows them
// (runtime/flags/flag_table.h): argument_table.h's sections become the shown groups, the names
// accepted without a member (other_arguments.h) a hidden one.
#include <string_view>

#include "runtime/usage_error.h"
#include "train/args/argument_table.h"
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

// How a member's text is read: its type's kind; an enum's or a spec's names as choices.
FlagKind kind_of(const ArgumentSpec& spec) {
  return std::visit(
      [&](auto member) {
        using Field = std::remove_cvref_t<decltype(TrainingArguments{}.*member)>;
        if constexpr (std::is_enum_v<Field>)
          return FlagKind::kChoice;
        else if constexpr (std::is_same_v<Field, bool> || std::is_same_v<Field, std::optional<bool>>)
          return FlagKind::kBool;
        else if constexpr (std::is_same_v<Field, std::int64_t> || std::is_same_v<Field, std::optional<std::int64_t>>)
          return FlagKind::kInteger;
        else if constexpr (std::is_same_v<Field, double> || std::is_same_v<Field, std::optional<double>>)
          return FlagKind::kNumber;
        else
          return spec.list ? FlagKind::kList : spec.choices.empty() ? FlagKind::kText : FlagKind::kChoice;
      },
      spec.member);
}

std::vector<std::string> choices_of(const ArgumentSpec& spec) {
  if (!spec.choices.empty()) return spec.choices;
  return std::visit(
      [](auto member) {
        using Field = std::remove_cvref_t<decltype(TrainingArguments{}.*member)>;
        if constexpr (std::is_enum_v<Field>)
          return enum_name_list<Field>();
        else
          return std::vector<std::string>{};
      },
      spec.member);
}

// The older HF names, the training scripts' and TRL's, and LLaMA-Factory's where they differ.
std::vector<std::string> aliases_of(const std::string& name) {
  std::vector<std::string> aliases;
  for (const auto& [alias, flag] : argument_aliases())
    if (flag == name) aliases.push_back("--" + alias);
  for (const OtherArgument& argument : llama_factory_other_arguments()) {
    const char* flag = llama_factory_flag(argument.name);
    if (flag != nullptr && name == flag && name != argument.name) aliases.push_back(std::string("--") + argument.name);
  }
  return aliases;
}

// LLaMA-Factory's finetuning_type oft (its examples/extras/oft files) refused as its oft_rank is,
// with the method to train instead, rather than as a word outside the list.
void check_finetuning_type(const std::string& value) {
  ZT_REQUIRE_USAGE(value != "oft",
                   "--finetuning_type oft (LLaMA-Factory): OFT (orthogonal fine-tuning) is not supported by zerotune; "
                   "train LoRA (finetuning_type lora) instead");
}

Flag flag_of(const ArgumentSpec& spec, const TrainingArguments& defaults) {
  const nlohmann::ordered_json value = argument_json(defaults, spec);
  return {.name = std::string("--") + spec.name,
          .kind = kind_of(spec),
          .help = spec.help,
          .default_value = value.is_null()     ? ""
                           : value.is_string() ? value.get<std::string>()
                                               : value.dump(),
          .aliases = aliases_of(spec.name),
          .choices = choices_of(spec),
          .check = std::string_view(spec.name) == "finetuning_type" ? check_finetuning_type
                                                                    : std::function<void(const std::string&)>()};
}

FlagKind kind_of(ValueKind kind) {
  switch (kind) {
    case ValueKind::kBool:
      return FlagKind::kBool;
    case ValueKind::kInteger:
      return FlagKind::kInteger;
    case ValueKind::kNumber:
      return FlagKind::kNumber;
    case ValueKind::kList:
      return FlagKind::kList;
    case ValueKind::kText:
    case ValueKind::kObject:
      break;
  }
  return FlagKind::kText;
}

// Every HF field, LLaMA-Factory option and run_clm.py option without a member, once (the first
// table's entry).
FlagGroup other_names() {
  FlagGroup group{.title = "Accepted without a member", .flags = {}, .hidden = true};
  for (const auto* table :
       {&transformers_other_arguments(), &llama_factory_other_arguments(), &run_clm_other_arguments()})
    for (const OtherArgument& argument : *table)
      if (find_other_argument(argument.name) == &argument)
        group.flags.push_back({.name = std::string("--") + argument.name,
                               .kind = kind_of(argument.kind),
                               .aliases = aliases_of(argument.name)});
  return group;
}

FlagTable build_train_flag_table() {
  FlagTable table{
      .command = "train",
      .description =
          "HF TrainingArguments' names (and a DeepSpeed config through --deepspeed), plus the data and\n"
          "method flags; an arguments file (HfArgumentParser's JSON or YAML, LLaMA-Factory's YAML) may be\n"
          "followed by flags that override it. The options by section, with the values a flag is limited\n"
          "to {a,b} and its [default]:\n",
      .groups = {},
      .notes =
          "Every other HF TrainingArguments field and LLaMA-Factory option is accepted too: one without effect\n"
          "in zerotune warns once, one zerotune cannot honour is refused with the reason (docs/TRAINING.md,\n"
          "TrainingArguments fields).\n",
      .usages = {"args.json|args.yaml [--name value | name=value ...]"},
      .name_value_words = true};
  const TrainingArguments defaults;
  for (const ArgumentSection& section : argument_sections()) {
    FlagGroup group{.title = section.title, .flags = {}};
    for (const ArgumentSpec& spec : section.specs) group.flags.push_back(flag_of(spec, defaults));
    table.groups.push_back(std::move(group));
  }
  table.groups.push_back(other_names());
  return table;
}

}  // namespace

const FlagTable& train_flag_table() {
  static const FlagTable table = build_train_flag_table();
  return table;
}

}  // namespace zt::train
