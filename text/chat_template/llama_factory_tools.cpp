// LLaMA-Factory's tool formats (src/llamafactory/data/tool_utils.py): the tools text that
// ToolFormatter appends to the system prompt and the call text of FunctionFormatter, for the
// formats its qwen, qwen3, glm4, chatglm3 and empty templates use. Python's json.dumps(...,
// ensure_ascii=False) is python_json_dumps.
#include <algorithm>

#include "runtime/error.h"
#include "text/chat_template/llama_factory_template.h"
#include "text/chat_template/python_json.h"

namespace zt::models::llama_factory {
namespace {

using nlohmann::ordered_json;

// QWEN_TOOL_PROMPT around {tool_text}.
constexpr const char* kQwenToolsHead =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr const char* kQwenToolsTail =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call>";

// GLM4_TOOL_PROMPT before {tool_text} (its text, not glm-4-9b-chat's: "智谱 AI 公司").
constexpr const char* kGlm4ToolsHead =
    "你是一个名为 ChatGLM 的人工智能助手。你是基于智谱 AI 公司训练的语言模型 GLM-4 模型开发的，"
    "你的任务是针对用户的问题和要求提供适当的答复和支持。\n\n# 可用工具";

ordered_json parse_tool(const std::string& tool) {
  ordered_json json = parse_ordered_json(tool, "a tool");
  ZT_REQUIRE(json.is_object(), "a tool must be a JSON object, got " + json.dump().substr(0, 200));
  return json;
}

bool is_function_tool(const ordered_json& tool) { return tool.value("type", ordered_json()) == "function"; }

// `tool.get("function", "") if tool.get("type") == "function" else tool`, which must name itself.
ordered_json function_of(const ordered_json& tool) {
  const ordered_json function = is_function_tool(tool) ? tool.value("function", ordered_json("")) : tool;
  ZT_REQUIRE(function.is_object() && function.contains("name") && function["name"].is_string(),
             "a tool must name its function: " + tool.dump().substr(0, 200));
  return function;
}

// Python's str() of a value that str.format prints: a string as it is, anything else as repr().
std::string python_str(const ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : python_repr(value);
}

// QwenToolUtils.tool_formatter: each tool, wrapped as {"type": "function", "function": ...}
// unless it is one, as one line of JSON.
std::string qwen_tools(const ChatTools& tools) {
  std::string text = kQwenToolsHead;
  for (const std::string& tool : tools) {
    ordered_json json = parse_tool(tool);
    if (!is_function_tool(json)) json = ordered_json{{"type", "function"}, {"function", json}};
    text.append("\n").append(
        python_json_dumps(json));  // piece by piece: GCC 12 warns falsely (-Wrestrict) on "\n" + string
  }
  return text + kQwenToolsTail;
}

// GLM4ToolUtils.tool_formatter: each function under "## name" as JSON indented by 4.
std::string glm4_tools(const ChatTools& tools) {
  std::string text = kGlm4ToolsHead;
  for (const std::string& tool : tools) {
    const ordered_json function = function_of(parse_tool(tool));
    text += "\n\n## " + function["name"].get<std::string>() + "\n\n" + python_json_dumps(function, 4) +
            "\n在调用上述函数时，请使用 Json 格式表示调用的参数。";
  }
  return text;
}

// One parameter line of DefaultToolUtils.tool_formatter.
std::string default_parameter(const std::string& name, const ordered_json& param, const ordered_json& required) {
  ZT_REQUIRE(param.is_object(), "tool parameter '" + name + "' must be a JSON object");
  std::string line =
      "  - " + name + " (" + python_str(param.value("type", ordered_json(""))) +
      (required.is_array() && std::find(required.begin(), required.end(), name) != required.end() ? ", required" : "") +
      "): " + python_str(param.value("description", ordered_json("")));
  const ordered_json options = param.value("enum", ordered_json());
  if (!options.is_null() && !options.empty()) {
    std::string joined;
    for (const ordered_json& option : options) {
      ZT_REQUIRE(option.is_string(), "LLaMA-Factory's default tool format joins the enum of parameter '" + name +
                                         "' as text; it holds " + option.dump());
      joined += (joined.empty() ? "" : ", ") + option.get<std::string>();
    }
    line += ", should be one of [" + joined + "]";
  }
  const ordered_json items = param.value("items", ordered_json());
  if (!items.is_null() && !items.empty())
    line += ", where each item should be " + python_str(items.value("type", ordered_json("")));
  return line + "\n";
}

// DefaultToolUtils.tool_formatter: DEFAULT_TOOL_PROMPT with each tool's name, description and
// parameters.properties, then the ReAct instructions naming the tools.
std::string default_tools(const ChatTools& tools) {
  std::string tool_text, names;
  for (const std::string& tool : tools) {
    const ordered_json function = function_of(parse_tool(tool));
    const std::string name = function["name"].get<std::string>();
    const ordered_json parameters = function.value("parameters", ordered_json::object());
    ZT_REQUIRE(
        parameters.is_object() && parameters.contains("properties") && parameters["properties"].is_object(),
        "LLaMA-Factory's default tool format lists each tool's parameters.properties; tool '" + name + "' has none");
    std::string args;
    for (auto it = parameters["properties"].begin(); it != parameters["properties"].end(); ++it)
      args += default_parameter(it.key(), it.value(), parameters.value("required", ordered_json::array()));
    tool_text += "> Tool Name: " + name +
                 "\nTool Description: " + python_str(function.value("description", ordered_json(""))) +
                 "\nTool Args:\n" + args + "\n";
    names += (names.empty() ? "" : ", ") + name;
  }
  return "You have access to the following tools:\n" + tool_text +
         "Use the following format if using a tool:\n```\nAction: tool name (one of [" + names +
         "])\nAction Input: the input to the tool, in a JSON format representing the kwargs (e.g. "
         "```{\"input\": \"hello world\", \"num_beams\": 5}```)\n```\n";
}

// FunctionCall.arguments: json.dumps of the call's arguments.
std::string arguments_of(const ToolCall& call) {
  return python_json_dumps(parse_ordered_json(call.arguments, "the arguments of the call of tool '" + call.name + "'"));
}

}  // namespace

std::string tool_prompt(ToolFormat format, const ChatTools& tools) {
  if (tools.empty()) return "";  // ToolFormatter.apply: "" for an empty list
  switch (format) {
    case ToolFormat::kQwen:
      return qwen_tools(tools);
    case ToolFormat::kGlm4:
      return glm4_tools(tools);
    case ToolFormat::kDefault:
      break;
  }
  return default_tools(tools);
}

std::string function_text(ToolFormat format, const std::vector<ToolCall>& calls, const std::string& template_name) {
  std::string text;
  for (const ToolCall& call : calls) {
    if (!text.empty()) text += "\n";
    switch (format) {
      case ToolFormat::kQwen:
        text += "<tool_call>\n{\"name\": " + python_json_dumps(ordered_json(call.name)) +
                ", \"arguments\": " + arguments_of(call) + "}\n</tool_call>";
        break;
      case ToolFormat::kGlm4:
        ZT_REQUIRE(calls.size() == 1, "LLaMA-Factory's template '" + template_name +
                                          "' writes one tool call per answer (GLM-4 does not support parallel "
                                          "functions); this answer calls " +
                                          std::to_string(calls.size()));
        text += call.name + "\n" + arguments_of(call);
        break;
      case ToolFormat::kDefault:
        text += "Action: " + call.name + "\nAction Input: " + arguments_of(call);
        break;
    }
  }
  return text;
}

std::string calls_json(const std::vector<ToolCall>& calls) {
  ordered_json list = ordered_json::array();
  for (const ToolCall& call : calls)
    list.push_back(
        {{"name", call.name},
         {"arguments", parse_ordered_json(call.arguments, "the arguments of the call of '" + call.name + "'")}});
  return python_json_dumps(list.size() == 1 ? list[0] : list);
}

}  // namespace zt::models::llama_factory
