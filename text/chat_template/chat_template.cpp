#include "text/chat_template/chat_template.h"

#include <array>

#include "runtime/error.h"

namespace zt::models {
namespace {

// Plain concatenation of the contents: for base models and data that carries its own format.
class NoChatTemplate final : public ChatTemplate {
 public:
  std::string_view name() const override { return "none"; }
  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool, const ChatTools& tools) const override {
    require_no_tools(messages, tools, name());
    require_roles(messages, name(), {"system", "user", "assistant"});
    std::vector<ChatPart> out;
    for (const ChatMessage& m : messages) out.push_back(chat_text(m.content, m.role == "assistant"));
    return out;
  }
};

struct BuiltIn {
  std::string_view name;
  std::string_view alias;  // LLaMA-Factory's name or a clearer one for the same template; may be empty
  std::unique_ptr<ChatTemplate> (*make)();
};

// `qwen` is the Qwen2.5 layout, as LLaMA-Factory's `qwen` template is.
const std::array<BuiltIn, 8> kBuiltIns = {{
    {"qwen", "qwen2.5", make_qwen2_5_chat_template},
    {"qwen2", "", make_qwen2_chat_template},
    {"qwen3", "", [] { return make_qwen3_chat_template(true); }},
    {"qwen3_nothink", "", [] { return make_qwen3_chat_template(false); }},
    {"glm4", "", make_glm4_chat_template},
    {"chatglm3", "", make_chatglm3_chat_template},
    {"chatglm2", "", make_chatglm2_chat_template},
    {"none", "", [] { return std::unique_ptr<ChatTemplate>(std::make_unique<NoChatTemplate>()); }},
}};

bool has_tool_calls(const std::vector<ChatMessage>& messages) {
  for (const ChatMessage& m : messages)
    if (!m.tool_calls.empty() || m.role == "tool") return true;
  return false;
}

}  // namespace

std::vector<std::int64_t> EncodedConversation::labels() const {
  std::vector<std::int64_t> out(ids.size(), -100);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (answer[i]) out[i] = ids[i];
  return out;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                 const ChatTools& tools) const {
  std::string text;
  for (const ChatPart& part : parts(messages, add_generation_prompt, tools))
    text += part.shown ? *part.shown : part.text;
  return text;
}

EncodedConversation ChatTemplate::encode(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                         bool add_generation_prompt, const ChatTools& tools) const {
  EncodedConversation out;
  std::string pending;
  bool pending_answer = false;
  auto flush = [&] {
    if (pending.empty()) return;
    for (TokenId id : tokenizer.encode(pending, /*add_special_tokens=*/false)) {
      out.ids.push_back(id);
      out.answer.push_back(pending_answer);
    }
    pending.clear();
  };
  for (const ChatPart& part : parts(messages, add_generation_prompt, tools)) {
    if (part.is_token) {
      flush();
      const std::optional<TokenId> id = tokenizer.token_to_id(part.text);
      if (!id)
        zt::fail("chat template '" + std::string(name()) + "' needs the token '" + part.text +
                 "', which the tokenizer read from " + tokenizer.source() +
                 " does not have: choose the template of this model (" + chat_template_names() + ")");
      out.ids.push_back(*id);
      out.answer.push_back(part.answer);
      continue;
    }
    if (!joins_text() || part.answer != pending_answer) flush();
    pending += part.text;
    pending_answer = part.answer;
  }
  flush();
  return out;
}

void require_roles(const std::vector<ChatMessage>& messages, std::string_view template_name,
                   const std::vector<std::string_view>& roles) {
  if (messages.empty()) zt::fail("chat template '" + std::string(template_name) + "': the conversation is empty");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    bool known = false;
    for (std::string_view role : roles) known = known || messages[i].role == role;
    if (known) continue;
    std::string accepted;
    for (std::string_view role : roles) accepted += (accepted.empty() ? "" : ", ") + std::string(role);
    zt::fail("chat template '" + std::string(template_name) + "': message " + std::to_string(i) + " has role '" +
             messages[i].role + "'; this template accepts " + accepted);
  }
}

void require_no_tools(const std::vector<ChatMessage>& messages, const ChatTools& tools,
                      std::string_view template_name) {
  if (tools.empty() && !has_tool_calls(messages)) return;
  zt::fail("chat template '" + std::string(template_name) + "' has no tool format, but this conversation " +
           (tools.empty() ? "calls tools" : "offers tools") +
           ": use a template whose model was trained with tools (qwen, qwen2, qwen3, glm4, chatglm3) or "
           "leave the tool samples out");
}

std::string chat_template_names() {
  std::string names;
  for (const BuiltIn& t : kBuiltIns) {
    names += (names.empty() ? "" : ", ") + std::string(t.name);
    if (!t.alias.empty()) names += " (alias " + std::string(t.alias) + ")";
  }
  return names;
}

std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name) {
  for (const BuiltIn& t : kBuiltIns)
    if (name == t.name || (!t.alias.empty() && name == t.alias)) return t.make();
  zt::fail("unknown chat template '" + std::string(name) + "'; accepted: " + chat_template_names());
}

}  // namespace zt::models
