// What Qwen2.5's and Qwen3's templates share: their base (<|im_end|> ends a turn), ChatML
// turns, the walk over the messages, the tools block of the system turn, <tool_call> answers
// and <tool_response> turns. Used by chat_template_qwen*.cpp.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template/chat_template.h"

namespace zt::models::qwen {

// What Qwen's ChatML templates are: <|im_end|> ends every turn, tool calls are <tool_call> blocks.
class ChatMlTemplate : public ChatTemplate {
 public:
  std::vector<std::string> end_of_turn_tokens() const final { return {"<|im_end|>"}; }
  bool writes_tool_call_blocks() const final { return true; }
};

// "# Tools\n\nYou may call one or more functions ...<tools>\n{tool}...\n</tools>\n\n...</tool_call>"
std::string tools_block(const ChatTools& tools);

// "<tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>": the arguments as JSON, or,
// when they are a JSON string and `string_as_is`, that string's text (Qwen3's rule).
std::string tool_call(const ToolCall& call, bool string_as_is);

// <|im_start|>role\ncontent<|im_end|>\n, none of it trained.
void append_turn(std::vector<ChatPart>& out, const std::string& role, const std::string& content);

// An assistant turn: the header "<|im_start|>assistant\n" as prompt, `body` and <|im_end|>
// trained, the "\n" after it not.
void append_answer(std::vector<ChatPart>& out, std::vector<ChatPart> body);

// Message i, a tool result: consecutive results share one user turn of <tool_response> blocks.
void append_tool_response(std::vector<ChatPart>& out, const std::vector<ChatMessage>& messages, std::size_t i);

// The messages from `first` on, each as its turn: an assistant message as the answer whose
// body `answer(i)` gives (each template writes its own), a tool result as a <tool_response>
// block, any other message as a plain turn.
void append_messages(std::vector<ChatPart>& out, const std::vector<ChatMessage>& messages, std::size_t first,
                     const std::function<std::vector<ChatPart>(std::size_t)>& answer);

// "<|im_start|>assistant\n", and the "<think>\n" that opens the answer's think block when the
// template writes it there (Qwen3's thinking models, QwQ): the model writes only "</think>".
void append_generation_prompt(std::vector<ChatPart>& out, bool opens_think = false);

// An assistant message as the thinking templates split it: `reasoning_content` when the message
// has it, else the text of "<think>reasoning</think>content" (content after the last
// "</think>", its leading newlines dropped; reasoning before the first, after its "<think>").
struct AssistantTurn {
  std::string content;
  std::string reasoning;
};
AssistantTurn split_reasoning(const ChatMessage& m);

std::string_view strip_leading_newlines(std::string_view s);
std::string_view strip_trailing_newlines(std::string_view s);

}  // namespace zt::models::qwen
