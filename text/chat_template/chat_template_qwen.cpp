// Qwen's ChatML as the chat_template of Qwen3's tokenizer_config.json renders conversations
// of system/user/assistant messages (no tools): no default system prompt; an assistant turn
// after the last user message carries a <think> block (empty unless the content has one),
// and reasoning inside earlier turns is dropped.
#include "text/chat_template/chat_template.h"

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

// The template's split of "<think>reasoning</think>answer" into its two halves.
struct AssistantTurn {
  std::string content;
  std::string reasoning;
};

AssistantTurn split_reasoning(const std::string& content) {
  const std::size_t last_close = content.rfind("</think>");
  if (last_close == std::string::npos) return {content, ""};
  AssistantTurn turn;
  turn.content = strip_leading_newlines(std::string_view(content).substr(last_close + 8));
  std::string_view before = strip_trailing_newlines(std::string_view(content).substr(0, content.find("</think>")));
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

class QwenChatTemplate final : public ChatTemplate {
 public:
  std::string_view name() const override { return "qwen"; }
  std::vector<std::string> end_of_turn_tokens() const override { return {"<|im_end|>"}; }

  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const override {
    require_roles(messages, name(), {"system", "user", "assistant"});
    std::vector<ChatPart> out;
    const std::size_t last_query = last_query_index(messages);
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const ChatMessage& m = messages[i];
      out.push_back(chat_token("<|im_start|>", false));
      if (m.role != "assistant") {
        out.push_back(chat_text(m.role + "\n" + m.content, false));
        out.push_back(chat_token("<|im_end|>", false));
        out.push_back(chat_text("\n", false));
        continue;
      }
      out.push_back(chat_text("assistant\n", false));
      const AssistantTurn turn = split_reasoning(m.content);
      const bool last = i + 1 == messages.size();
      if (i > last_query && (last || !turn.reasoning.empty())) {
        std::string reasoning(strip_trailing_newlines(strip_leading_newlines(turn.reasoning)));
        out.push_back(chat_text(
            "<think>\n" + reasoning + "\n</think>\n\n" + std::string(strip_leading_newlines(turn.content)), true));
      } else {
        out.push_back(chat_text(turn.content, true));
      }
      out.push_back(chat_token("<|im_end|>", true));
      out.push_back(chat_text("\n", false));
    }
    if (add_generation_prompt) {
      out.push_back(chat_token("<|im_start|>", false));
      out.push_back(chat_text("assistant\n", false));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<ChatTemplate> make_qwen_chat_template() { return std::make_unique<QwenChatTemplate>(); }

}  // namespace zt::models
