#include "train/args/training_arguments.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "runtime/error.h"
#include "runtime/json_text.h"
#include "runtime/log.h"
#include "runtime/rank.h"
#include "runtime/terminal/help_entry.h"
#include "runtime/usage_error.h"
#include "runtime/user_paths.h"
#include "train/args/argument_reader.h"
#include "train/args/argument_table.h"
#include "train/args/other_arguments.h"
#include "train/args/report_to.h"
#include "train/args/yaml_file.h"

namespace zt::train {
namespace {

using OrderedJson = nlohmann::ordered_json;

// Whole numbers as integers, as HF writes its defaults (500, not 500.0).
OrderedJson number(double value) {
  if (value == std::floor(value) && std::abs(value) < 1e15) return static_cast<std::int64_t>(value);
  return value;
}

// HF's dict fields: given as an object in a file (or '{...}' as a flag), recorded as one.
OrderedJson text_or_object(const std::string& name, const std::string& text) {
  if (name != "deepspeed" && name != "lr_scheduler_kwargs") return text;
  OrderedJson parsed = OrderedJson::parse(text, nullptr, false);  // a path does not parse
  return parsed.is_object() ? parsed : OrderedJson(text);
}

// A list member as HF records it: one name as a string, several as a list.
OrderedJson list_or_text(const std::string& text) {
  if (text.find(',') == std::string::npos) return text;
  OrderedJson items = OrderedJson::array();
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

OrderedJson member_json(const TrainingArguments& args, const ArgumentSpec& spec) {
  return std::visit(
      [&](auto member) -> OrderedJson {
        const auto& field = args.*member;
        using Field = std::remove_cvref_t<decltype(field)>;
        if constexpr (std::is_same_v<Field, std::optional<double>>)
          return field ? number(*field) : OrderedJson(nullptr);
        else if constexpr (std::is_same_v<Field, std::optional<std::int64_t>> ||
                           std::is_same_v<Field, std::optional<bool>>)
          return field ? OrderedJson(*field) : OrderedJson(nullptr);
        else if constexpr (std::is_enum_v<Field>)
          return OrderedJson(name_of(field));
        else if constexpr (std::is_same_v<Field, double>)
          return number(field);
        else if constexpr (std::is_same_v<Field, std::string>)
          return spec.list ? list_or_text(field) : text_or_object(spec.name, field);
        else
          return OrderedJson(field);
      },
      spec.member);
}

// What HF and LLaMA-Factory imply from what was given.
void apply_implied(TrainingArguments& args, std::vector<std::string>& errors) {
  if (args.use_cpu) {
    if (args.was_given("device") && args.device != "cpu")
      errors.push_back("--use_cpu (or --no_cuda) asks for the CPU but --device is " + args.device + "; give one");
    args.device = "cpu";
  }
  if (args.run_name.empty()) args.run_name = args.output_dir;  // HF's name for an unnamed run
  if (args.neat_packing) args.packing = true;
  if (args.stage == "pt" && !args.was_given("packing")) args.packing = true;  // LLaMA-Factory packs under pt
  if (!args.was_given("gradient_checkpointing")) {
    // LLaMA-Factory checkpoints every model unless told not to.
    if (args.llama_factory_style()) args.gradient_checkpointing = !args.disable_gradient_checkpointing;
    if (args.disable_gradient_checkpointing) args.gradient_checkpointing = false;
  }
  if (args.llama_factory_style() && !args.was_given("max_length")) args.max_length = 2048;  // cutoff_len's default
}

// The accepted names without a member, judged on their final values: a warning each (once),
// or a refusal.
void judge_other_arguments(TrainingArguments& args, std::vector<std::string>& errors) {
  for (const auto& [name, value] : args.other_arguments.items()) {
    const Judgement judgement = judge(*find_other_argument(name), value);
    if (judgement.kind == Judgement::kRefusal) errors.push_back(judgement.message);
    if (judgement.kind == Judgement::kWarning) args.warnings.push_back(judgement.message);
  }
}

// The arguments are the command line's (or stand for it, in a file): their problems are usage
// errors, all of them in one message.
[[noreturn]] void report(const std::vector<std::string>& errors) {
  std::string message =
      errors.size() == 1 ? errors[0] : "the arguments have " + std::to_string(errors.size()) + " problems:";
  if (errors.size() > 1)
    for (const std::string& error : errors) message += "\n  " + error;
  fail_usage(message);
}

// After reading: parse errors stop here; then implied settings, judgements and checks.
TrainingArguments finish(TrainingArguments args, std::vector<std::string> errors) {
  if (!errors.empty()) report(errors);
  apply_implied(args, errors);
  judge_other_arguments(args, errors);
  judge_report_to(args, errors);
  validate_training_arguments(args, errors);
  if (!errors.empty()) report(errors);
  return args;
}

std::string read_arguments_file(const std::string& path) {
  require_readable_file(path, "the arguments file");
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in, "cannot read the arguments file " + path + ": check the path");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Rank 0 alone speaks for the job: N ranks do not print N copies.
void log_warnings(const TrainingArguments& args) {
  if (current_rank().rank != 0) return;
  for (const std::string& warning : args.warnings) ZT_LOG(kWarn, warning);
}

// The names a flag accepts, for flags limited to a few: its spec's or its enum's.
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

}  // namespace

std::optional<ArgumentsFileFormat> arguments_file_format(const std::string& token) {
  auto ends_with = [&](std::string_view tail) {
    return token.size() > tail.size() && token.compare(token.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (token.rfind("--", 0) == 0 || token.find('=') != std::string::npos) return std::nullopt;
  if (ends_with(".json")) return ArgumentsFileFormat::kJson;
  if (ends_with(".yaml") || ends_with(".yml")) return ArgumentsFileFormat::kYaml;
  return std::nullopt;
}

std::int64_t TrainingArguments::warmup_steps_for(std::int64_t total_steps) const {
  if (warmup_steps >= 1) return static_cast<std::int64_t>(warmup_steps);
  const double share = warmup_steps > 0 ? warmup_steps : warmup_ratio;
  return static_cast<std::int64_t>(std::ceil(share * static_cast<double>(total_steps)));
}

TrainingArguments parse_training_arguments_text(std::string_view text, ArgumentsFileFormat format,
                                                const std::string& source, const std::vector<std::string>& overrides) {
  nlohmann::json object;
  if (format == ArgumentsFileFormat::kYaml) {
    object = parse_yaml(text, source);
  } else {
    // Deeper than any config needs: refused before anything walks it recursively.
    const auto bounded = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      ZT_REQUIRE(depth <= 64, source + " nests deeper than 64 levels");
      return true;
    };
    object = parse_json(text, source, bounded);
  }
  ZT_REQUIRE(object.is_object(), source + " must hold a " +
                                     (format == ArgumentsFileFormat::kYaml ? "map" : "JSON object") +
                                     " of argument names and values");
  TrainingArguments args;
  std::vector<std::string> errors;
  ArgumentReader reader(args, errors);
  reader.read_object(object, source);
  reader.read_flags(overrides);
  return finish(std::move(args), std::move(errors));
}

TrainingArguments parse_training_arguments(const std::vector<std::string>& tokens) {
  TrainingArguments args;
  if (auto format = tokens.empty() ? std::nullopt : arguments_file_format(tokens[0])) {
    args = parse_training_arguments_text(read_arguments_file(tokens[0]), *format, tokens[0],
                                         std::vector<std::string>(tokens.begin() + 1, tokens.end()));
  } else {
    std::vector<std::string> errors;
    ArgumentReader(args, errors).read_flags(tokens);
    args = finish(std::move(args), std::move(errors));
  }
  log_warnings(args);
  return args;
}

std::string training_arguments_json(const TrainingArguments& args) {
  OrderedJson json;
  for (const ArgumentSpec& spec : argument_table()) json[spec.name] = member_json(args, spec);
  for (const auto& [name, value] : args.other_arguments.items()) json[name] = value;
  return json.dump(2);
}

std::string training_arguments_help() {
  const TrainingArguments defaults;
  std::string out;
  for (const ArgumentSection& section : argument_sections()) {
    out += std::string(out.empty() ? "" : "\n") + section.title + ":\n";
    for (const ArgumentSpec& spec : section.specs) {
      const OrderedJson value = member_json(defaults, spec);
      const std::string shown = value.is_null() ? "" : value.is_string() ? value.get<std::string>() : value.dump();
      out += help_entry(std::string("  --") + spec.name, choices_of(spec), spec.help, shown);
    }
  }
  out +=
      "\nEvery other HF TrainingArguments field and LLaMA-Factory option is accepted too: one without effect\n"
      "in zerotune warns once, one zerotune cannot honour is refused with the reason (docs/TRAINING.md,\n"
      "TrainingArguments fields).\n";
  return out;
}

}  // namespace zt::train
