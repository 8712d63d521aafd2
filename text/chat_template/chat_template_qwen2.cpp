// Qwen2's and Qwen2.5's ChatML, as the chat_template of their tokenizer_config.json renders
// it: a system turn always (the default prompt when the conversation has none: Qwen2.5
// Instruct's "You are Qwen, created by Alibaba Cloud. ...", Qwen2 Instruct's and the Qwen2.5
// base models' "You are a helpful assistant.", Qwen2.5-Math-Instruct's "Please reason step by
// step, and put your final answer within \boxed{}."), the tools listed in that system turn, tool
// calls as <tool_call> blocks in the assistant's turn, tool results as <tool_response> blocks
// in a user turn, and no <think> block. QwQ-32B's template is the same layout with thinking:
// no default system prompt (a system turn only for a system message or tools, then "" before
// the tools' "\n\n"), every answer's reasoning dropped (what follows its last "</think>"), and a
// generation prompt that opens the think block with "<think>\n" (prompt, not answer).
#include <optional>

#include "text/chat_template/chat_template.h"
#include "text/chat_template/qwen_chatml.h"

namespace zt::models {
namespace {

class Qwen2ChatTemplate final : public qwen::ChatMlTemplate {
 public:
  // `default_system`: the system prompt without a system message; none for no system turn.
  // `thinks`: QwQ's reasoning (dropped from answers, opened by the generation prompt).
  Qwen2ChatTemplate(std::string name, std::optional<std::string> default_system, bool thinks)
      : name_(std::move(name)), default_system_(std::move(default_system)), thinks_(thinks) {}

  std::string_view name() const override { return name_; }
  bool writes_think_blocks() const override { return thinks_; }

  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const ChatTools& tools) const override {
    require_roles(messages, name(), {"system", "user", "assistant", "tool"});
    std::vector<ChatPart> out;
    const bool system_first = messages.front().role == "system";
    const std::string system = system_first ? messages.front().content : default_system_.value_or("");
    if (!tools.empty())
      qwen::append_turn(out, "system", system + "\n\n" + qwen::tools_block(tools));
    else if (system_first || default_system_)
      qwen::append_turn(out, "system", system);
    qwen::append_messages(out, messages, system_first ? 1 : 0,
                          [&](std::size_t i) { return std::vector<ChatPart>{chat_text(answer(messages[i]), true)}; });
    if (add_generation_prompt) qwen::append_generation_prompt(out, thinks_);
    return out;
  }

 private:
  // The text after "assistant\n": the content, then each tool call on its own line.
  std::string answer(const ChatMessage& m) const {
    std::string text =
        thinks_ ? std::string(qwen::strip_leading_newlines(qwen::split_reasoning({m.role, m.content}).content))
                : m.content;
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on operator+ of a literal and a string.
    for (std::size_t c = 0; c < m.tool_calls.size(); ++c) {
      if (c > 0 || !m.content.empty()) text += '\n';  // QwQ tests the content before dropping its reasoning
      text += qwen::tool_call(m.tool_calls[c], false);
    }
    return text;
  }

  std::string name_;
  std::optional<std::string> default_system_;
  bool thinks_;
};

}  // namespace

std::unique_ptr<ChatTemplate> make_qwen2_chat_template() {
  return std::make_unique<Qwen2ChatTemplate>("qwen2", "You are a helpful assistant.", false);
}

std::unique_ptr<ChatTemplate> make_qwen2_5_chat_template() {
  return std::make_unique<Qwen2ChatTemplate>(
      "qwen", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", false);
}

// Qwen2.5-Math-Instruct: Qwen2.5 Instruct's template with its own default system prompt.
std::unique_ptr<ChatTemplate> make_qwen2_5_math_chat_template() {
  return std::make_unique<Qwen2ChatTemplate>(
      "qwen2.5_math", "Please reason step by step, and put your final answer within \\boxed{}.", false);
}

std::unique_ptr<ChatTemplate> make_qwq_chat_template() {
  return std::make_unique<Qwen2ChatTemplate>("qwq", std::nullopt, true);
}

}  // namespace zt::models
