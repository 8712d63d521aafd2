// DeepSeek-R1-Distill-Qwen's template (the chat_template of its tokenizer_config.json, shared by
// every DeepSeek-R1-Distill model): the bos, then the last system message's text (with no
// separator, wherever it stands), each user message after <｜User｜>, each answer after
// <｜Assistant｜> ending with <｜end▁of▁sentence｜>, an answer's reasoning dropped (the text after
// its last "</think>", nothing stripped; reasoning_content unused). The revision published a few
// weeks after the models' release ends the generation prompt with "<think>\n", opening the think
// block (prompt, not answer); the first one ends it with <｜Assistant｜>. The template writes tool
// calls only for a message whose content is None and in DeepSeek's own layout: zerotune offers no
// tools with it.
#include <string_view>

#include "text/chat_template/chat_template.h"

namespace zt::models {
namespace {

constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
constexpr std::string_view kUser = "<｜User｜>";
constexpr std::string_view kAssistant = "<｜Assistant｜>";
constexpr std::string_view kEnd = "<｜end▁of▁sentence｜>";

class DeepSeekR1DistillTemplate final : public ChatTemplate {
 public:
  explicit DeepSeekR1DistillTemplate(bool opens_think) : opens_think_(opens_think) {}

  std::string_view name() const override {
    return opens_think_ ? "deepseek_r1_distill" : "deepseek_r1_distill_initial";
  }
  std::vector<std::string> end_of_turn_tokens() const override { return {std::string(kEnd)}; }
  bool writes_think_blocks() const override { return true; }

  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const ChatTools& tools) const override {
    require_no_tools(messages, tools, name());
    require_roles(messages, name(), {"system", "user", "assistant"});
    std::vector<ChatPart> out;
    out.push_back(chat_token(std::string(kBos), false));
    std::string system;
    for (const ChatMessage& m : messages)
      if (m.role == "system") system = m.content;
    if (!system.empty()) out.push_back(chat_text(system, false));
    for (const ChatMessage& m : messages) {
      if (m.role == "user") {
        out.push_back(chat_token(std::string(kUser), false));
        if (!m.content.empty()) out.push_back(chat_text(m.content, false));
      } else if (m.role == "assistant") {
        out.push_back(chat_token(std::string(kAssistant), false));
        const std::string content = answer(m.content);
        if (!content.empty()) out.push_back(chat_text(content, true));
        out.push_back(chat_token(std::string(kEnd), true));
      }
    }
    if (add_generation_prompt) {
      out.push_back(chat_token(std::string(kAssistant), false));
      if (opens_think_) out.push_back(chat_text("<think>\n", false));
    }
    return out;
  }

 private:
  // content.split('</think>')[-1]: what follows the last "</think>", as it is.
  static std::string answer(const std::string& content) {
    const std::size_t close = content.rfind("</think>");
    return close == std::string::npos ? content : content.substr(close + 8);
  }

  bool opens_think_;
};

}  // namespace

std::unique_ptr<ChatTemplate> make_deepseek_r1_distill_chat_template(bool opens_think) {
  return std::make_unique<DeepSeekR1DistillTemplate>(opens_think);
}

}  // namespace zt::models
