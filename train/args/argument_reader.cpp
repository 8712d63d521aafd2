#include "train/args/argument_reader.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "runtime/terminal/closest_name.h"
#include "train/args/argument_table.h"
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

using nlohmann::json;

std::string unknown_flag_message(const std::string& name) {
  std::vector<std::string> known;
  for (const ArgumentSpec& spec : argument_table()) known.push_back(spec.name);
  for (const auto* table : {&transformers_other_arguments(), &llama_factory_other_arguments()})
    for (const OtherArgument& other : *table) known.push_back(other.name);
  const std::optional<std::string> closest = closest_name(name, known);
  return "unknown argument --" + name + (closest ? " (did you mean --" + *closest + "?)" : "") +
         "; `zerotune train --help` lists the accepted ones";
}

const ArgumentSpec* find_spec(const std::string& name) {
  for (const ArgumentSpec& spec : argument_table())
    if (name == spec.name) return &spec;
  return nullptr;
}

std::optional<bool> parse_bool(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  if (value == "true" || value == "1" || value == "yes" || value == "y" || value == "t") return true;
  if (value == "false" || value == "0" || value == "no" || value == "n" || value == "f") return false;
  return std::nullopt;
}

std::optional<double> parse_double(const std::string& value) {
  std::size_t used = 0;
  try {
    double parsed = std::stod(value, &used);
    if (used == value.size() && std::isfinite(parsed)) return parsed;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// An integer, also written as a whole float (2.0: a file's number that went through a float).
std::optional<std::int64_t> parse_int(const std::string& value) {
  std::size_t used = 0;
  try {
    long long parsed = std::stoll(value, &used);
    if (used == value.size()) return parsed;
  } catch (const std::exception&) {
  }
  auto as_double = parse_double(value);
  if (as_double && *as_double == std::floor(*as_double) && std::abs(*as_double) < 9.0e15)
    return static_cast<std::int64_t>(*as_double);
  return std::nullopt;
}

std::string not_accepted(const std::string& flag, const std::string& value, const std::vector<std::string>& choices) {
  std::string accepted;
  for (const std::string& choice : choices) accepted += (accepted.empty() ? "" : ", ") + choice;
  return flag + " '" + value + "' is not accepted; choose one of: " + accepted;
}

// Sets one argument from its text; returns an error line, empty on success.
std::string assign(TrainingArguments& args, const ArgumentSpec& spec, const std::string& value) {
  const std::string flag = std::string("--") + spec.name;
  if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end())
    return not_accepted(flag, value, spec.choices);
  return std::visit(
      [&](auto member) -> std::string {
        using Field = std::remove_reference_t<decltype(args.*member)>;
        if constexpr (std::is_enum_v<Field>) {
          auto parsed = enum_from_name<Field>(value);
          if (!parsed) return not_accepted(flag, value, enum_name_list<Field>());
          args.*member = *parsed;
        } else if constexpr (std::is_same_v<Field, bool> || std::is_same_v<Field, std::optional<bool>>) {
          auto parsed = parse_bool(value);
          if (!parsed) return flag + " takes true or false, got '" + value + "'";
          args.*member = *parsed;
        } else if constexpr (std::is_same_v<Field, std::int64_t> ||
                             std::is_same_v<Field, std::optional<std::int64_t>>) {
          auto parsed = parse_int(value);
          if (!parsed) return flag + " takes an integer, got '" + value + "'";
          args.*member = *parsed;
        } else if constexpr (std::is_same_v<Field, double> || std::is_same_v<Field, std::optional<double>>) {
          auto parsed = parse_double(value);
          if (!parsed) return flag + " takes a number, got '" + value + "'";
          args.*member = *parsed;
        } else {
          args.*member = value;
        }
        return "";
      },
      spec.member);
}

// A file's null for `spec`: an optional member becomes none; any other keeps its value.
void clear_optional(TrainingArguments& args, const ArgumentSpec& spec) {
  std::visit(
      [&](auto member) {
        using Field = std::remove_reference_t<decltype(args.*member)>;
        if constexpr (std::is_same_v<Field, std::optional<bool>> ||
                      std::is_same_v<Field, std::optional<std::int64_t>> ||
                      std::is_same_v<Field, std::optional<double>>)
          args.*member = std::nullopt;
      },
      spec.member);
}

bool is_bool(const ArgumentSpec& spec) {
  return std::holds_alternative<bool TrainingArguments::*>(spec.member) ||
         std::holds_alternative<std::optional<bool> TrainingArguments::*>(spec.member);
}

bool is_flag(const std::string& token) { return token.rfind("--", 0) == 0; }

// LLaMA-Factory's `name=value` override.
bool is_override(const std::string& token) {
  const std::size_t eq = token.find('=');
  return eq != std::string::npos && eq > 0 && token[0] != '-';
}

// A file's value as a flag's text: a list of plain values joins with commas (lora_target:
// [q_proj, v_proj]); objects keep their JSON (deepspeed, *_kwargs).
std::string text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array() && std::none_of(value.begin(), value.end(), [](const json& v) { return v.is_structured(); })) {
    std::string joined;
    for (const json& item : value) joined += (joined.empty() ? "" : ",") + text_of(item);
    return joined;
  }
  return value.dump();
}

// LLaMA-Factory's max_length (GeneratingArguments) limits generation, and its cutoff_len is the
// sample length zerotune calls max_length: in a file that has both, max_length is the former.
bool is_generation_max_length(const json& object, const std::string& name, const json& value) {
  return name == "max_length" && !value.is_null() && object.contains("cutoff_len") &&
         !object.at("cutoff_len").is_null();
}

}  // namespace

std::string canonical_argument_name(const std::string& name) {
  for (const auto& [old_name, new_name] : argument_aliases())
    if (name == old_name) return new_name;
  if (const char* flag = llama_factory_flag(name)) return flag;
  return name;
}

void ArgumentReader::read_flags(const std::vector<std::string>& tokens) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    const std::size_t eq = token.find('=');
    if (is_flag(token)) {
      std::string name = token.substr(2);
      std::optional<std::string> value;
      if (eq != std::string::npos) value = token.substr(eq + 1), name = token.substr(2, eq - 2);
      read_flag(name, value, tokens, i);
    } else if (is_override(token)) {
      read_flag(token.substr(0, eq), token.substr(eq + 1), tokens, i);
    } else if (arguments_file_format(token)) {
      errors_.push_back("unexpected argument '" + token +
                        "': an arguments file comes first, before the flags that override it, and only one is "
                        "read: zerotune train args.json|args.yaml [--name value | name=value ...]");
    } else {
      errors_.push_back("unexpected argument '" + token + "': arguments are --name value pairs");
    }
  }
}

void ArgumentReader::read_flag(const std::string& given_name, std::optional<std::string> value,
                               const std::vector<std::string>& tokens, std::size_t& i) {
  const std::string name = canonical_argument_name(given_name);
  const bool next_is_value = i + 1 < tokens.size() && !is_flag(tokens[i + 1]);
  const ArgumentSpec* spec = find_spec(name);
  const OtherArgument* other = spec ? nullptr : find_other_argument(name);
  if (!spec && !other) {
    errors_.push_back(unknown_flag_message(given_name));
    if (!value && next_is_value) ++i;
    return;
  }
  const bool boolean = spec ? is_bool(*spec) : other->kind == ValueKind::kBool;
  if (!value && boolean) {
    value = "true";
    if (next_is_value && parse_bool(tokens[i + 1])) value = tokens[++i];
  } else if (!value && other && other->kind == ValueKind::kList && next_is_value) {
    json items = json::array();
    while (i + 1 < tokens.size() && !is_flag(tokens[i + 1]) && !is_override(tokens[i + 1]))
      items.push_back(tokens[++i]);
    return set_other(name, std::move(items));
  } else if (!value && spec && spec->list && next_is_value) {
    std::string items;
    while (i + 1 < tokens.size() && !is_flag(tokens[i + 1]) && !is_override(tokens[i + 1]))
      items += (items.empty() ? "" : ",") + tokens[++i];
    value = items;
  } else if (!value && next_is_value) {
    value = tokens[++i];
  } else if (!value) {
    errors_.push_back("--" + given_name + " needs a value");
    return;
  }
  if (spec) return set_member(name, *value, "");
  std::string error;
  json parsed = value_from_text(*other, *value, error);
  if (!error.empty()) return errors_.push_back(error);
  set_other(name, std::move(parsed));
}

void ArgumentReader::read_object(const json& object, const std::string& source) {
  for (const auto& [given_name, value] : object.items()) {
    if (is_generation_max_length(object, given_name, value)) {
      args_.warnings.push_back(
          "--max_length (LLaMA-Factory) has no effect in zerotune: beside cutoff_len it is LLaMA-Factory's "
          "generation limit; cutoff_len sets the sample length");
      continue;
    }
    const std::string name = canonical_argument_name(given_name);
    const OtherArgument* other = find_other_argument(name);
    if (const ArgumentSpec* spec = find_spec(name)) {
      if (!value.is_null())
        set_member(spec->name, text_of(value), source + ": ");
      else
        clear_optional(args_, *spec);
    } else if (other) {
      if (value.is_null()) continue;
      const bool typed =
          other->kind == ValueKind::kBool || other->kind == ValueKind::kInteger || other->kind == ValueKind::kNumber;
      if (!value.is_string() || !typed) {
        set_other(name, value);
        continue;
      }
      std::string error;
      json parsed = value_from_text(*other, value.get<std::string>(), error);
      if (!error.empty())
        errors_.push_back(source + ": " + error);
      else
        set_other(name, std::move(parsed));
    } else {
      errors_.push_back(source + ": " + unknown_flag_message(given_name));
    }
  }
}

void ArgumentReader::set_member(const std::string& name, const std::string& text, const std::string& where) {
  if (std::string error = assign(args_, *find_spec(name), text); !error.empty()) errors_.push_back(where + error);
  args_.given.insert(name);
}

void ArgumentReader::set_other(const std::string& name, json value) {
  if (is_secret(name)) {
    std::string placeholder = name;
    std::transform(placeholder.begin(), placeholder.end(), placeholder.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    value = "<" + placeholder + ">";
  }
  args_.other_arguments[name] = std::move(value);
  args_.given.insert(name);
}

}  // namespace zt::train
