// Built-in chat templates: each renders a conversation as its model family's own chat template
// does (the Jinja text of the family's tokenizer_config.json, or its tokenizer code where the
// Jinja has no place for tools), and encodes it to ids with a mask of the tokens the model is
// trained to produce (the assistant's answers and tool calls). See docs/TOKENIZERS.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template/template_choice.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::models {

// One call of a tool by the assistant (OpenAI's `tool_calls[i].function`).
struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of the arguments, an object as the data gives them
};

struct ChatMessage {
  std::string role;  // system, user, assistant, or tool (a tool's result; GLM's "observation")
  std::string content;
  std::vector<ToolCall> tool_calls = {};                        // assistant: the tools it calls
  std::optional<std::string> reasoning_content = std::nullopt;  // assistant: its thinking, kept apart
};

// One stretch of a rendered conversation: text, or a template token reached by name.
struct ChatPart {
  std::string text;
  bool is_token = false;  // `text` names a token (e.g. "<|user|>") to look up, not to encode
  bool answer = false;    // the model is trained to produce it
  // What render() shows when it differs from `text`: "" for tokens only training adds (the
  // eos after an answer), " content" where ChatGLM's template writes sentencepiece's space.
  std::optional<std::string> shown;
};

inline ChatPart chat_text(std::string text, bool answer) { return {std::move(text), false, answer, std::nullopt}; }
inline ChatPart chat_token(std::string name, bool answer) { return {std::move(name), true, answer, std::nullopt}; }

struct EncodedConversation {
  std::vector<TokenId> ids;
  std::vector<bool> answer;  // per id: part of an assistant answer
  // ids where `answer`, -100 elsewhere: the labels of supervised fine-tuning.
  std::vector<std::int64_t> labels() const;
};

// The tools offered to the model: JSON objects as OpenAI's `tools` list holds them,
// {"type": "function", "function": {"name", "description", "parameters"}}.
using ChatTools = std::vector<std::string>;

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  virtual std::string_view name() const = 0;

  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const ChatTools& tools = {}) const;
  // Each text part is encoded on its own (consecutive text parts together where the
  // template's tokenizer would see them as one string), template tokens by id.
  EncodedConversation encode(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                             bool add_generation_prompt, const ChatTools& tools = {}) const;

  // Tokens that end the assistant's turn when the model produces them (ChatML's <|im_end|>,
  // GLM's <|user|> and <|observation|>): generation stops there as at an eos id.
  virtual std::vector<std::string> end_of_turn_tokens() const { return {}; }

  // The conversation as parts. Throws for an empty conversation, a role the template has no
  // place for, or tools in a template without a tool format.
  virtual std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                      const ChatTools& tools) const = 0;

 protected:
  // Whether adjacent text parts are encoded as one string (byte-level BPE sees the whole
  // rendered text) or one by one (ChatGLM's sentencepiece encodes each piece separately).
  virtual bool joins_text() const { return true; }
};

// A built-in template by name: qwen (alias qwen2.5), qwen2, qwen3, qwen3_nothink, glm4,
// chatglm3, chatglm2, none. Any other name is an error listing them.
std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name);
std::string chat_template_names();

// Templates' shared checks: a non-empty conversation of the given roles only; no tools.
void require_roles(const std::vector<ChatMessage>& messages, std::string_view template_name,
                   const std::vector<std::string_view>& roles);
void require_no_tools(const std::vector<ChatMessage>& messages, const ChatTools& tools, std::string_view template_name);

std::unique_ptr<ChatTemplate> make_qwen2_chat_template();
std::unique_ptr<ChatTemplate> make_qwen2_5_chat_template();
std::unique_ptr<ChatTemplate> make_qwen3_chat_template(bool enable_thinking);
std::unique_ptr<ChatTemplate> make_chatglm3_chat_template();
std::unique_ptr<ChatTemplate> make_glm4_chat_template();
std::unique_ptr<ChatTemplate> make_chatglm2_chat_template();

}  // namespace zt::models
