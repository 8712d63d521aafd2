#include "text/chat_template/qwen_chatml.h"

#include "text/chat_template/python_json.h"

namespace zt::models::qwen {

std::string tools_block(const ChatTools& tools) {
  std::string text =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const std::string& tool : tools) text.append("\n").append(python_json_dumps(parse_ordered_json(tool, "a tool")));
  return text +
         "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
         "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
         "<args-json-object>}\n</tool_call>";
}

std::string tool_call(const ToolCall& call, bool string_as_is) {
  const nlohmann::ordered_json arguments =
      parse_ordered_json(call.arguments, "the arguments of the call of tool '" + call.name + "'");
  const std::string written =
      string_as_is && arguments.is_string() ? arguments.get<std::string>() : python_json_dumps(arguments);
  return "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + written + "}\n</tool_call>";
}

void append_turn(std::vector<ChatPart>& out, const std::string& role, const std::string& content) {
  out.push_back(chat_token("<|im_start|>", false));
  out.push_back(chat_text(role + "\n" + content, false));
  out.push_back(chat_token("<|im_end|>", false));
  out.push_back(chat_text("\n", false));
}

void append_answer(std::vector<ChatPart>& out, std::vector<ChatPart> body) {
  out.push_back(chat_token("<|im_start|>", false));
  out.push_back(chat_text("assistant\n", false));
  for (ChatPart& part : body) out.push_back(std::move(part));
  out.push_back(chat_token("<|im_end|>", true));
  out.push_back(chat_text("\n", false));
}

void append_tool_response(std::vector<ChatPart>& out, const std::vector<ChatMessage>& messages, std::size_t i) {
  if (i == 0 || messages[i - 1].role != "tool") {
    out.push_back(chat_token("<|im_start|>", false));
    out.push_back(chat_text("user", false));
  }
  out.push_back(chat_text("\n<tool_response>\n" + messages[i].content + "\n</tool_response>", false));
  if (i + 1 == messages.size() || messages[i + 1].role != "tool") {
    out.push_back(chat_token("<|im_end|>", false));
    out.push_back(chat_text("\n", false));
  }
}

void append_messages(std::vector<ChatPart>& out, const std::vector<ChatMessage>& messages, std::size_t first,
                     const std::function<std::vector<ChatPart>(std::size_t)>& answer) {
  for (std::size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "assistant")
      append_answer(out, answer(i));
    else if (m.role == "tool")
      append_tool_response(out, messages, i);
    else
      append_turn(out, m.role, m.content);
  }
}

void append_generation_prompt(std::vector<ChatPart>& out, bool opens_think) {
  out.push_back(chat_token("<|im_start|>", false));
  out.push_back(chat_text(opens_think ? "assistant\n<think>\n" : "assistant\n", false));
}

std::string_view strip_leading_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}

std::string_view strip_trailing_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

AssistantTurn split_reasoning(const ChatMessage& m) {
  if (m.reasoning_content) return {m.content, *m.reasoning_content};
  const std::size_t last_close = m.content.rfind("</think>");
  if (last_close == std::string::npos) return {m.content, ""};
  AssistantTurn turn;
  const std::string_view content(m.content);
  turn.content = strip_leading_newlines(content.substr(last_close + 8));
  std::string_view before = strip_trailing_newlines(content.substr(0, content.find("</think>")));
  const std::size_t open = before.rfind("<think>");
  if (open != std::string_view::npos) before = before.substr(open + 7);
  turn.reasoning = strip_leading_newlines(before);
  return turn;
}

}  // namespace zt::models::qwen
