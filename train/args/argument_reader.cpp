#include "train/args/argument_reader.h"

#include <algorithm>

#include "runtime/flags/flag_words.h"
#include "runtime/usage_error.h"
#include "train/args/argument_table.h"
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

using nlohmann::json;

// Sets one argument from its text, checked by its flag's kind as every command's values are;
// returns the problem, empty on success.
std::string assign(TrainingArguments& args, const ArgumentSpec& spec, const std::string& value) {
  const std::string flag = std::string("--") + spec.name;
  try {
    check_flag_value(*train_flag_table().find(flag), value);
    std::visit(
        [&](auto member) {
          using Field = std::remove_reference_t<decltype(args.*member)>;
          if constexpr (std::is_enum_v<Field>)
            args.*member = *enum_from_name<Field>(value);
          else if constexpr (std::is_same_v<Field, bool> || std::is_same_v<Field, std::optional<bool>>)
            args.*member = *flag_bool(value);
          else if constexpr (std::is_same_v<Field, std::int64_t> || std::is_same_v<Field, std::optional<std::int64_t>>)
            args.*member = integer_flag(flag, value);
          else if constexpr (std::is_same_v<Field, double> || std::is_same_v<Field, std::optional<double>>)
            args.*member = number_flag(flag, value);
          else
            args.*member = value;
        },
        spec.member);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
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

// A file's value as a flag's text: a list of plain values joins with commas (lora_target:
// [q_proj, v_proj]); objects keep their JSON (deepspeed, *_kwargs).
std::string text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array() && std::none_of(value.begin(), value.end(), [](const json& v) { return v.is_structured(); })) {
    std::string joined;
    for (const json& item : value) joined.append(joined.empty() ? "" : ",").append(text_of(item));
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

void ArgumentReader::read_flags(const std::vector<std::string>& tokens) {
  for (const GivenFlag& given : read_flag_words(tokens, train_flag_table(), errors_)) {
    if (given.flag == nullptr) {
      errors_.push_back("unexpected argument '" + given.name +
                        (arguments_file_format(given.name)
                             ? "': an arguments file comes first, before the flags that override it, and only one "
                               "is read: zerotune train args.json|args.yaml [--name value | name=value ...]"
                             : "': arguments are --name value pairs"));
      continue;
    }
    const std::string name = given.flag->name.substr(2);
    args_.given.insert(given.name.substr(2));  // an alias too, for the defaults its program implies
    if (find_argument_spec(name)) {
      set_member(name, given.value, "");
      continue;
    }
    const OtherArgument& other = *find_other_argument(name);
    if (other.kind == ValueKind::kList && !given.words.empty()) {
      set_other(name, json(given.words));
      continue;
    }
    std::string error;
    json parsed = value_from_text(other, given.value, error);
    if (!error.empty())
      errors_.push_back(error);
    else
      set_other(name, std::move(parsed));
  }
}

void ArgumentReader::read_object(const json& object, const std::string& source) {
  for (const auto& [given_name, value] : object.items()) {
    if (is_generation_max_length(object, given_name, value)) {
      args_.warnings.push_back(
          "--max_length (LLaMA-Factory) has no effect in zerotune: beside cutoff_len it is LLaMA-Factory's "
          "generation limit; cutoff_len sets the sample length");
      continue;
    }
    const Flag* flag = train_flag_table().find("--" + given_name);
    if (flag == nullptr) {
      errors_.push_back(source + ": " + unknown_flag_message("--" + given_name, train_flag_table()));
      continue;
    }
    const std::string name = flag->name.substr(2);
    if (!value.is_null()) args_.given.insert(given_name);  // an alias too, as on the command line
    const OtherArgument* other = find_other_argument(name);
    if (const ArgumentSpec* spec = find_argument_spec(name)) {
      if (!value.is_null())
        set_member(spec->name, text_of(value), source + ": ");
      else
        clear_optional(args_, *spec);
    } else {
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
    }
  }
}

void ArgumentReader::set_member(const std::string& name, const std::string& text, const std::string& where) {
  if (std::string error = assign(args_, *find_argument_spec(name), text); !error.empty())
    errors_.push_back(where + error);
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
