#include "train/args/training_arguments.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/error.h"
#include "train/args/argument_table.h"

namespace zt::train {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string unknown_flag_message(const std::string& name) {
  std::string closest;
  std::size_t best = name.size() / 3 + 2;  // beyond that a suggestion is noise
  for (const ArgumentSpec& spec : argument_table()) {
    std::size_t d = edit_distance(name, spec.name);
    if (d < best) best = d, closest = spec.name;
  }
  std::string msg = "unknown argument --" + name;
  if (!closest.empty()) msg += " (did you mean --" + closest + "?)";
  return msg + "; `zerotune train --help` lists the accepted ones";
}

const ArgumentSpec* find_spec(std::string name) {
  for (const auto& [old_name, new_name] : argument_aliases())
    if (name == old_name) name = new_name;
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

std::optional<std::int64_t> parse_int(const std::string& value) {
  std::size_t used = 0;
  try {
    long long parsed = std::stoll(value, &used);
    if (used == value.size()) return parsed;
  } catch (const std::exception&) {
  }
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
        } else if constexpr (std::is_same_v<Field, bool>) {
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

bool is_bool(const ArgumentSpec& spec) { return std::holds_alternative<bool TrainingArguments::*>(spec.member); }

void parse_flags(const std::vector<std::string>& tokens, TrainingArguments& args, std::vector<std::string>& errors) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (token.rfind("--", 0) != 0) {
      errors.push_back("unexpected argument '" + token + "': arguments are --name value pairs");
      continue;
    }
    std::string name = token.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) value = name.substr(eq + 1), name.resize(eq);
    const ArgumentSpec* spec = find_spec(name);
    if (!spec) {
      errors.push_back(unknown_flag_message(name));
      if (!value && i + 1 < tokens.size() && tokens[i + 1].rfind("--", 0) != 0) ++i;
      continue;
    }
    if (!value) {
      if (is_bool(*spec)) {
        value = "true";
        if (i + 1 < tokens.size() && parse_bool(tokens[i + 1])) value = tokens[++i];
      } else if (i + 1 < tokens.size()) {
        value = tokens[++i];
      } else {
        errors.push_back(std::string("--") + spec->name + " needs a value");
        continue;
      }
    }
    if (std::string error = assign(args, *spec, *value); !error.empty()) errors.push_back(error);
    args.given.insert(spec->name);
  }
}

void parse_json_file(const std::string& path, TrainingArguments& args, std::vector<std::string>& errors) {
  std::ifstream in(path);
  ZT_REQUIRE(in, "cannot read the arguments file " + path + ": check the path");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    fail(path + " is not valid JSON: " + e.what());
  }
  ZT_REQUIRE(json.is_object(), path + " must hold a JSON object of argument names and values");
  for (const auto& [name, value] : json.items()) {
    const ArgumentSpec* spec = find_spec(name);
    if (!spec) {
      errors.push_back(path + ": " + unknown_flag_message(name));
      continue;
    }
    if (value.is_null()) continue;
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (std::string error = assign(args, *spec, text); !error.empty()) errors.push_back(path + ": " + error);
    args.given.insert(spec->name);
  }
}

}  // namespace

std::int64_t TrainingArguments::warmup_steps_for(std::int64_t total_steps) const {
  if (warmup_steps > 0) return warmup_steps;
  return static_cast<std::int64_t>(std::ceil(warmup_ratio * static_cast<double>(total_steps)));
}

TrainingArguments parse_training_arguments(const std::vector<std::string>& tokens) {
  TrainingArguments args;
  std::vector<std::string> errors;
  const bool json_file = tokens.size() == 1 && tokens[0].size() > 5 && tokens[0].rfind("--", 0) != 0 &&
                         tokens[0].compare(tokens[0].size() - 5, 5, ".json") == 0;
  if (json_file)
    parse_json_file(tokens[0], args, errors);
  else
    parse_flags(tokens, args, errors);
  if (errors.empty()) validate_training_arguments(args, errors);
  if (!errors.empty()) {
    std::string message =
        errors.size() == 1 ? errors[0] : "the arguments have " + std::to_string(errors.size()) + " problems:";
    if (errors.size() > 1)
      for (const std::string& error : errors) message += "\n  " + error;
    fail(message);
  }
  return args;
}

std::string training_arguments_json(const TrainingArguments& args) {
  nlohmann::ordered_json json;
  for (const ArgumentSpec& spec : argument_table()) {
    json[spec.name] = std::visit(
        [&](auto member) -> nlohmann::ordered_json {
          const auto& field = args.*member;
          using Field = std::remove_cvref_t<decltype(field)>;
          if constexpr (std::is_same_v<Field, std::optional<std::int64_t>> ||
                        std::is_same_v<Field, std::optional<double>>)
            return field ? nlohmann::ordered_json(*field) : nlohmann::ordered_json(nullptr);
          else if constexpr (std::is_enum_v<Field>)
            return nlohmann::ordered_json(name_of(field));
          else
            return nlohmann::ordered_json(field);
        },
        spec.member);
  }
  return json.dump(2);
}

std::string training_arguments_help() {
  TrainingArguments defaults;
  std::ostringstream out;
  for (const ArgumentSpec& spec : argument_table()) {
    std::string shown = std::visit(
        [&](auto member) -> std::string {
          const auto& field = defaults.*member;
          using Field = std::remove_cvref_t<decltype(field)>;
          if constexpr (std::is_same_v<Field, bool>)
            return field ? "true" : "false";
          else if constexpr (std::is_same_v<Field, std::string>)
            return field.empty() ? "" : field;
          else if constexpr (std::is_enum_v<Field>)
            return name_of(field);
          else if constexpr (std::is_same_v<Field, std::optional<std::int64_t>> ||
                             std::is_same_v<Field, std::optional<double>>)
            return field ? nlohmann::json(*field).dump() : "";
          else
            return nlohmann::json(field).dump();
        },
        spec.member);
    out << "  --" << spec.name;
    for (std::size_t pad = std::string(spec.name).size(); pad < 30; ++pad) out << ' ';
    out << spec.help;
    if (!shown.empty()) out << " [" << shown << "]";
    out << '\n';
  }
  return out.str();
}

}  // namespace zt::train
