// The GLM family's layouts. ChatGLM3 and GLM-4 write each turn as <|role|> "\n" content and
// end the prompt with <|assistant|>; the model itself produces the "\n", the answer and the
// token after it (the next <|role|>, or eos at the end), so those are the trained tokens, as
// in THUDM's fine-tuning scripts. ChatGLM2 writes "[Round N]\n\n问：...\n\n答：" rounds and
// trains the last answer followed by eos.
#include "text/chat_template/chat_template.h"

#include "runtime/error.h"

namespace zt::models {
namespace {

const std::vector<std::string_view> kGlmRoles = {"system", "user", "assistant", "observation"};

ChatPart encoded_only(std::string token, bool answer) {
  ChatPart part = chat_token(std::move(token), answer);
  part.shown = "";
  return part;
}

// ChatGLM3 and GLM-4: they differ in the prefix token, in how content is spaced, and in eos.
class RoleTokenTemplate : public ChatTemplate {
 public:
  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const override {
    require_roles(messages, name(), kGlmRoles);
    std::vector<ChatPart> out = {chat_token("[gMASK]", false), chat_token(start_token(), false)};
    bool after_answer = false;
    for (const ChatMessage& m : messages) {
      const bool answer = m.role == "assistant";
      out.push_back(chat_token("<|" + m.role + "|>", after_answer));
      append_content(m.content, answer, out);
      after_answer = answer;
    }
    if (add_generation_prompt)
      out.push_back(chat_token("<|assistant|>", false));
    else if (after_answer)
      out.push_back(encoded_only(eos_token(), true));
    return out;
  }

  std::vector<std::string> end_of_turn_tokens() const override { return {"<|user|>", "<|observation|>"}; }

 protected:
  virtual std::string start_token() const = 0;
  virtual std::string eos_token() const = 0;
  virtual void append_content(const std::string& content, bool answer, std::vector<ChatPart>& out) const = 0;
};

// ChatGLM3 encodes "\n" and the content separately, each with sentencepiece's leading space;
// its shipped template writes that space as "\n ".
class ChatGlm3Template final : public RoleTokenTemplate {
 public:
  std::string_view name() const override { return "chatglm3"; }

 protected:
  bool joins_text() const override { return false; }
  std::string start_token() const override { return "sop"; }
  std::string eos_token() const override { return "</s>"; }
  void append_content(const std::string& content, bool answer, std::vector<ChatPart>& out) const override {
    out.push_back(chat_text("\n", answer));
    ChatPart body = chat_text(content, answer);
    body.shown = " " + content;
    out.push_back(std::move(body));
  }
};

class Glm4Template final : public RoleTokenTemplate {
 public:
  std::string_view name() const override { return "glm4"; }

 protected:
  std::string start_token() const override { return "<sop>"; }
  std::string eos_token() const override { return "<|endoftext|>"; }
  void append_content(const std::string& content, bool answer, std::vector<ChatPart>& out) const override {
    out.push_back(chat_text("\n" + content, answer));
  }
};

class ChatGlm2Template final : public ChatTemplate {
 public:
  std::string_view name() const override { return "chatglm2"; }

  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool) const override {
    require_roles(messages, name(), {"user", "assistant"});
    for (std::size_t i = 0; i < messages.size(); ++i)
      if (messages[i].role != (i % 2 == 0 ? "user" : "assistant"))
        zt::fail("chat template 'chatglm2': message " + std::to_string(i) + " is '" + messages[i].role +
                 "' but ChatGLM2 rounds alternate user, assistant, starting with user (no system role)");
    // The tokenizer adds [gMASK] sop in front of ChatGLM2's prompt; the prompt text lacks them.
    std::vector<ChatPart> out = {encoded_only("[gMASK]", false), encoded_only("sop", false)};
    const bool ends_with_answer = messages.back().role == "assistant";
    std::string prompt;
    for (std::size_t i = 0; i < messages.size(); i += 2) {
      prompt += "[Round " + std::to_string(i / 2 + 1) + "]\n\n问：" + messages[i].content + "\n\n答：";
      if (i + 1 < messages.size() && i + 2 < messages.size()) prompt += messages[i + 1].content + "\n\n";
    }
    out.push_back(chat_text(prompt, false));
    if (ends_with_answer) {
      out.push_back(chat_text(messages.back().content, true));
      out.push_back(encoded_only("</s>", true));
    }
    return out;
  }

 protected:
  bool joins_text() const override { return false; }
};

}  // namespace

std::unique_ptr<ChatTemplate> make_chatglm3_chat_template() { return std::make_unique<ChatGlm3Template>(); }
std::unique_ptr<ChatTemplate> make_glm4_chat_template() { return std::make_unique<Glm4Template>(); }
std::unique_ptr<ChatTemplate> make_chatglm2_chat_template() { return std::make_unique<ChatGlm2Template>(); }

}  // namespace zt::models
