#include "serve/tool_request.h"

#include "serve/api_error.h"

namespace zt::serve {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The field `name` of `object`, or nullptr when it is absent or null.
template <typename Json>
const Json* field(const Json& object, const char* name) {
  const auto found = object.find(name);
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

// One entry of `tools`, checked, in the order the template prints it.
ordered_json tool_of(const ordered_json& tool, const std::string& where) {
  if (!tool.is_object()) throw invalid_request("'" + where + "' must be an object", where);
  const ordered_json* type = field(tool, "type");
  if (type != nullptr && *type != "function")
    throw invalid_request(
        "'" + where + ".type' must be \"function\": this server offers functions only, got " + type->dump(),
        where + ".type");
  const ordered_json* function = field(tool, "function");
  if (function == nullptr || !function->is_object())
    throw invalid_request("'" + where + ".function' must be an object with a 'name'", where + ".function");
  const ordered_json* name = field(*function, "name");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty())
    throw invalid_request("'" + where + ".function.name' must be a non-empty string", where + ".function.name");
  ordered_json out = {{"name", *name}};
  if (const ordered_json* description = field(*function, "description")) {
    if (!description->is_string())
      throw invalid_request("'" + where + ".function.description' must be a string", where + ".function.description");
    out["description"] = *description;
  }
  if (const ordered_json* parameters = field(*function, "parameters")) {
    if (!parameters->is_object())
      throw invalid_request("'" + where + ".function.parameters' must be a JSON Schema object",
                            where + ".function.parameters");
    out["parameters"] = *parameters;
  }
  return {{"type", "function"}, {"function", std::move(out)}};
}

// tool_choice: "auto" or "none"; what would force a call is refused.
bool parses_calls(const json* choice, bool has_tools) {
  if (choice == nullptr) return has_tools;
  if (*choice == "none") return false;
  if (*choice == "auto") {
    if (!has_tools) throw invalid_request("'tool_choice' is only allowed when 'tools' are given", "tool_choice");
    return true;
  }
  if (*choice == "required" || choice->is_object())
    throw invalid_request("'tool_choice' " + choice->dump() +
                              " is not supported by this server: it cannot force the model to call a tool; send "
                              "\"auto\" (the model decides) or \"none\"",
                          "tool_choice");
  throw invalid_request("'tool_choice' must be \"auto\", \"none\", \"required\" or a named function", "tool_choice");
}

}  // namespace

ToolFields read_tool_fields(const json& body, const std::string& text) {
  // OpenAI's deprecated function calling: left unread, the model would answer without being
  // shown the functions, and the client would wait for a function_call that never comes.
  for (const char* name : {"functions", "function_call"})
    if (field(body, name) != nullptr)
      throw invalid_request("'" + std::string(name) +
                                "' (OpenAI's deprecated function calling) is not supported by this server: send "
                                "the functions as 'tools' ([{\"type\": \"function\", \"function\": {...}}]) "
                                "and read the answer's 'tool_calls'",
                            name);
  ToolFields fields;
  if (const json* parallel = field(body, "parallel_tool_calls")) {
    if (!parallel->is_boolean())
      throw invalid_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    fields.parallel_tool_calls = parallel->get<bool>();
  }
  const json* tools = field(body, "tools");
  if (tools != nullptr && !tools->is_array())
    throw invalid_request("'tools' must be a list of {\"type\": \"function\", \"function\": {...}}", "tools");
  const bool has_tools = tools != nullptr && !tools->empty();
  fields.parse_calls = parses_calls(field(body, "tool_choice"), has_tools);
  // With tool_choice "none" the model is not shown the tools, so that it answers in text (as
  // vLLM's --exclude-tools-when-tool-choice-none).
  if (!fields.parse_calls) return fields;
  const ordered_json ordered = ordered_json::parse(text);  // parsed once already: it is JSON
  const ordered_json& list = ordered.at("tools");
  for (std::size_t i = 0; i < list.size(); ++i)
    fields.tools.push_back(tool_of(list[i], "tools[" + std::to_string(i) + "]").dump());
  return fields;
}

std::vector<models::ToolCall> message_tool_calls(const json& message, const std::string& where) {
  const json* calls = field(message, "tool_calls");
  if (calls == nullptr) return {};
  const std::string base = where + ".tool_calls";
  if (!calls->is_array()) throw invalid_request("'" + base + "' must be a list", base);
  std::vector<models::ToolCall> out;
  for (std::size_t j = 0; j < calls->size(); ++j) {
    const std::string at = base + "[" + std::to_string(j) + "]";
    const json& call = (*calls)[j];
    const json* function = call.is_object() ? field(call, "function") : nullptr;
    if (function == nullptr || !function->is_object())
      throw invalid_request("'" + at + ".function' must be an object with 'name' and 'arguments'", at + ".function");
    const json* name = field(*function, "name");
    if (name == nullptr || !name->is_string())
      throw invalid_request("'" + at + ".function.name' must be a string", at + ".function.name");
    const json* arguments = field(*function, "arguments");
    std::string text = arguments == nullptr ? "{}" : arguments->is_string() ? arguments->get<std::string>() : "";
    if (arguments != nullptr && arguments->is_object()) text = arguments->dump();
    if (!json::accept(text))
      throw invalid_request("'" + at + ".function.arguments' must be the call's arguments as a JSON string, got " +
                                (arguments ? arguments->dump() : "nothing"),
                            at + ".function.arguments");
    out.push_back({name->get<std::string>(), text});
  }
  return out;
}

}  // namespace zt::serve
