#include "train/args/other_arguments.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "runtime/flags/flag_table.h"
#include "runtime/usage_error.h"

namespace zt::train {
namespace {

using nlohmann::json;

const std::unordered_map<std::string_view, const OtherArgument*>& index() {
  static const auto by_name = [] {
    std::unordered_map<std::string_view, const OtherArgument*> map;
    for (const auto* table :
         {&transformers_other_arguments(), &llama_factory_other_arguments(), &run_clm_other_arguments()})
      for (const OtherArgument& argument : *table)
        if (argument.verdict != Verdict::kHonoured) map.emplace(argument.name, &argument);
    return map;
  }();
  return by_name;
}

// Numbers compare by value (0 and 0.0 are one default), everything else as JSON.
bool same_value(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

bool is_one_of(const json& values, const json& value) {
  return std::any_of(values.begin(), values.end(), [&](const json& q) { return same_value(q, value); });
}

// A quiet object lists, by key, the values each key may have: an object is quiet when each of its
// keys is listed and has one of them (as a default AcceleratorConfig written out whole).
bool within(const json& quiet, const json& value) {
  if (!quiet.is_object() || !value.is_object()) return false;
  for (const auto& [key, given] : value.items())
    if (!quiet.contains(key) || !is_one_of(quiet[key], given)) return false;
  return true;
}

bool is_quiet(const OtherArgument& argument, const json& value) {
  if (std::string_view(argument.quiet) == "*") return true;
  const json quiet = json::parse(argument.quiet);
  return is_one_of(quiet, value) ||
         std::any_of(quiet.begin(), quiet.end(), [&](const json& q) { return within(q, value); });
}

// The value as a message shows it: scalars as written, a list or an object by what it is.
std::string shown(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) return "(an object)";
  if (value.is_array()) return "(a list)";
  if (value.is_number_float() && value.get<double>() == std::floor(value.get<double>()))
    return json(static_cast<std::int64_t>(value.get<double>())).dump();  // 5, not 5.0
  return value.dump();
}

}  // namespace

const OtherArgument* find_other_argument(std::string_view name) {
  auto found = index().find(name);
  return found == index().end() ? nullptr : found->second;
}

const char* llama_factory_flag(std::string_view name) {
  for (const OtherArgument& argument : llama_factory_other_arguments())
    if (argument.verdict == Verdict::kHonoured && name == argument.name) return argument.reason;
  return nullptr;
}

bool is_secret(std::string_view name) {
  if (name == "token") return true;  // run_clm's hub token
  for (std::string_view tail : {"_token", "_api_key", "_secret", "_webhook_url"})
    if (name.size() > tail.size() && name.substr(name.size() - tail.size()) == tail) return true;
  return false;
}

Judgement judge(const OtherArgument& argument, const json& value) {
  if (is_quiet(argument, value)) return {};
  const std::string flag = std::string("--") + argument.name;
  if (argument.verdict == Verdict::kNoEffect) {
    const char* whose = argument.origin == Origin::kLlamaFactory ? " (LLaMA-Factory)" : "";
    return {Judgement::kWarning, flag + whose + " has no effect in zerotune: " + argument.reason};
  }
  if (argument.origin == Origin::kLlamaFactory) {
    const std::string feature = argument.feature ? argument.feature : argument.name;
    return {Judgement::kRefusal, flag + " " + shown(value) + " (LLaMA-Factory): " + feature +
                                     " is not supported by zerotune; " + argument.reason};
  }
  return {Judgement::kRefusal, flag + " " + shown(value) + " is not supported: " + argument.reason};
}

json value_from_text(const OtherArgument& argument, const std::string& text, std::string& error) {
  const std::string flag = std::string("--") + argument.name;
  switch (argument.kind) {
    case ValueKind::kBool:
    case ValueKind::kInteger:
    case ValueKind::kNumber:
      try {  // checked and read as every command's flags are (runtime/flags/flag_table.h)
        if (argument.kind == ValueKind::kBool) {
          check_flag_value({.name = flag, .kind = FlagKind::kBool}, text);
          return *flag_bool(text);
        }
        return argument.kind == ValueKind::kInteger ? json(integer_flag(flag, text)) : json(number_flag(flag, text));
      } catch (const UsageError& e) {
        error = e.what();
        return nullptr;
      }
    case ValueKind::kObject:
      if (!text.empty() && text.front() == '{') {  // a dict as a flag, as HF parses one
        json parsed = json::parse(text, nullptr, false);
        if (parsed.is_object()) return parsed;
        error = flag + " looks like a JSON object but is not valid JSON";
        return nullptr;
      }
      return text;  // a path, as HF reads one
    case ValueKind::kList:
      return json::array({text});
    default:
      return text;
  }
}

}  // namespace zt::train
