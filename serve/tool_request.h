// The tool fields of a chat completion request, read and checked as OpenAI reads them:
// `tools` (functions only), `tool_choice` (auto or none: this server cannot force a call),
// `parallel_tool_calls`, and the tool calls of earlier assistant messages. Bad values are an
// ApiError 400 naming the field.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_template/chat_template.h"

namespace zt::serve {

struct ToolFields {
  // Each tool as the chat template renders it: {"type": "function", "function": {"name",
  // "description", "parameters"}}, the function's keys in that order and the parameters' as
  // the client wrote them.
  models::ChatTools tools;
  bool parse_calls = false;  // tools offered and tool_choice not "none": read calls out of the answer
  bool parallel_tool_calls = true;
};

// `body` is the parsed request, `text` its text (the tools keep their keys' order from it).
ToolFields read_tool_fields(const nlohmann::json& body, const std::string& text);

// An assistant message's `tool_calls` (`where` names the message in errors).
std::vector<models::ToolCall> message_tool_calls(const nlohmann::json& message, const std::string& where);

}  // namespace zt::serve
