// Qwen3's ChatML, as the chat_template of its tokenizer_config.json renders it: no default
// system prompt; tools, tool calls and tool results as Qwen2.5 writes them; an assistant turn
// after the last user query carries its reasoning in a <think> block (the last turn always
// does, empty when it has none) and earlier turns lose theirs. enable_thinking=false
// (`qwen3_nothink`) adds the empty think block to the generation prompt; for training it is
// then prompt, not answer, since generation starts after it.
#include "text/chat_template/chat_template.h"
#include "text/chat_template/qwen_chatml.h"

namespace zt::models {
namespace {

std::string_view strip_leading_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}

std::string_view strip_trailing_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

// The template's split of an assistant message into reasoning and content: reasoning_content
// when the message has it, else the text of "<think>reasoning</think>content".
struct AssistantTurn {
  std::string content;
  std::string reasoning;
};

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

// The last user message that is not a wrapped tool response; the last index when none is.
std::size_t last_query_index(const std::vector<ChatMessage>& messages) {
  for (std::size_t i = messages.size(); i-- > 0;) {
    const std::string& c = messages[i].content;
    const bool tool_response = c.starts_with("<tool_response>") && c.ends_with("</tool_response>");
    if (messages[i].role == "user" && !tool_response) return i;
  }
  return messages.size() - 1;
}

const char* const kEmptyThink = "<think>\n\n</think>\n\n";

class Qwen3ChatTemplate final : public qwen::ChatMlTemplate {
 public:
  explicit Qwen3ChatTemplate(bool enable_thinking) : enable_thinking_(enable_thinking) {}

  std::string_view name() const override { return enable_thinking_ ? "qwen3" : "qwen3_nothink"; }

  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const ChatTools& tools) const override {
    require_roles(messages, name(), {"system", "user", "assistant", "tool"});
    std::vector<ChatPart> out;
    const bool system_first = messages.front().role == "system";
    if (!tools.empty())
      qwen::append_turn(out, "system",
                        (system_first ? messages.front().content + "\n\n" : "") + qwen::tools_block(tools));
    else if (system_first)
      qwen::append_turn(out, "system", messages.front().content);
    const std::size_t last_query = last_query_index(messages);
    qwen::append_messages(out, messages, system_first ? 1 : 0,
                          [&](std::size_t i) { return answer(messages[i], i > last_query, i + 1 == messages.size()); });
    if (add_generation_prompt) {
      qwen::append_generation_prompt(out);
      if (!enable_thinking_) out.push_back(chat_text(kEmptyThink, false));
    }
    return out;
  }

 private:
  // What follows "assistant\n": the think block where the template writes one, the content,
  // then each tool call on its own line.
  std::vector<ChatPart> answer(const ChatMessage& m, bool after_last_query, bool last) const {
    const AssistantTurn turn = split_reasoning(m);
    std::vector<ChatPart> body;
    std::string text = turn.content;
    if (after_last_query && (last || !turn.reasoning.empty())) {
      const std::string think =
          "<think>\n" + std::string(strip_trailing_newlines(strip_leading_newlines(turn.reasoning))) + "\n</think>\n\n";
      // Without thinking the generation prompt already holds the empty block.
      const bool given = !enable_thinking_ && turn.reasoning.empty();
      body.push_back(chat_text(think, !given));
      text = strip_leading_newlines(turn.content);
    }
    for (std::size_t c = 0; c < m.tool_calls.size(); ++c) {
      if (c > 0 || !turn.content.empty()) text += '\n';  // piece by piece: see chat_template_qwen2.cpp
      text += qwen::tool_call(m.tool_calls[c], true);
    }
    body.push_back(chat_text(text, true));
    return body;
  }

  bool enable_thinking_;
};

}  // namespace

std::unique_ptr<ChatTemplate> make_qwen3_chat_template(bool enable_thinking) {
  return std::make_unique<Qwen3ChatTemplate>(enable_thinking);
}

}  // namespace zt::models
