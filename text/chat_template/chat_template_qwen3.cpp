// Qwen3's ChatML, as the chat_template of its tokenizer_config.json renders it: no default
// system prompt; tools, tool calls and tool results as Qwen2.5 writes them; an assistant turn
// after the last user query carries its reasoning in a <think> block (the last turn always
// does, empty when it has none) and earlier turns lose theirs. Three variants of one Jinja
// text: the hybrid models' (`qwen3`); the same given enable_thinking=false (`qwen3_nothink`),
// whose generation prompt holds the empty think block, for training then prompt, not answer,
// since generation starts after it; and the Thinking-2507 models' (`qwen3_thinking`), whose
// generation prompt opens the think block with "<think>\n", for training prompt too, the model
// writing only the reasoning and "</think>". The Instruct-2507 models' texts: one is Qwen3's
// without enable_thinking (`qwen3_instruct`, rendering as `qwen3` does when enable_thinking is
// not given), the other writes no think block at all (`qwen3_instruct_plain`: an answer is its
// content as given, reasoning_content unused, "<think>...</think>" in the content kept).
#include "text/chat_template/chat_template.h"
#include "text/chat_template/qwen_chatml.h"

namespace zt::models {
namespace {

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
  explicit Qwen3ChatTemplate(Qwen3Thinking thinking) : thinking_(thinking) {}

  std::string_view name() const override {
    switch (thinking_) {
      case Qwen3Thinking::kOff:
        return "qwen3_nothink";
      case Qwen3Thinking::kAlways:
        return "qwen3_thinking";
      case Qwen3Thinking::kInstruct:
        return "qwen3_instruct";
      case Qwen3Thinking::kPlain:
        return "qwen3_instruct_plain";
      default:
        return "qwen3";
    }
  }
  // Qwen3 with thinking allowed and the Thinking-2507 models; not the Instruct-2507 models or
  // thinking turned off, whose answers are all content.
  bool writes_think_blocks() const override {
    return thinking_ == Qwen3Thinking::kOptional || thinking_ == Qwen3Thinking::kAlways;
  }

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
      qwen::append_generation_prompt(out, thinking_ == Qwen3Thinking::kAlways);
      if (thinking_ == Qwen3Thinking::kOff) out.push_back(chat_text(kEmptyThink, false));
    }
    return out;
  }

 private:
  // What follows "assistant\n": the think block where the template writes one, the content,
  // then each tool call on its own line.
  std::vector<ChatPart> answer(const ChatMessage& m, bool after_last_query, bool last) const {
    const qwen::AssistantTurn turn =
        thinking_ == Qwen3Thinking::kPlain ? qwen::AssistantTurn{m.content, ""} : qwen::split_reasoning(m);
    std::vector<ChatPart> body;
    std::string text = turn.content;
    if (thinking_ != Qwen3Thinking::kPlain && after_last_query && (last || !turn.reasoning.empty())) {
      const std::string reasoning(qwen::strip_trailing_newlines(qwen::strip_leading_newlines(turn.reasoning)));
      if (thinking_ == Qwen3Thinking::kAlways) {
        // The generation prompt opened the block.
        body.push_back(chat_text("<think>\n", false));
        body.push_back(chat_text(reasoning + "\n</think>\n\n", true));
      } else {
        // Without thinking the generation prompt already holds the empty block.
        const bool given = thinking_ == Qwen3Thinking::kOff && turn.reasoning.empty();
        body.push_back(chat_text("<think>\n" + reasoning + "\n</think>\n\n", !given));
      }
      text = qwen::strip_leading_newlines(turn.content);
    }
    for (std::size_t c = 0; c < m.tool_calls.size(); ++c) {
      if (c > 0 || !turn.content.empty()) text += '\n';  // piece by piece: see chat_template_qwen2.cpp
      text += qwen::tool_call(m.tool_calls[c], true);
    }
    body.push_back(chat_text(text, true));
    return body;
  }

  Qwen3Thinking thinking_;
};

}  // namespace

std::unique_ptr<ChatTemplate> make_qwen3_chat_template(Qwen3Thinking thinking) {
  return std::make_unique<Qwen3ChatTemplate>(thinking);
}

}  // namespace zt::models
