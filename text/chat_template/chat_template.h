// Built-in chat templates: the prompt layouts of Qwen (ChatML, as Qwen3's shipped
// tokenizer_config.json renders plain conversations), ChatGLM3, GLM-4 and ChatGLM2, plus
// `none`. A template renders a conversation to text, and encodes it to ids with a mask of the
// tokens the model is trained to produce (the assistant's answers). See docs/TOKENIZERS.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace zt::models {

struct ChatMessage {
  std::string role;  // system, user, assistant (observation for GLM)
  std::string content;
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

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  virtual std::string_view name() const = 0;

  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // Each text part is encoded on its own (consecutive text parts together where the
  // template's tokenizer would see them as one string), template tokens by id.
  EncodedConversation encode(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                             bool add_generation_prompt) const;

  // Tokens that end the assistant's turn when the model produces them (ChatML's <|im_end|>,
  // GLM's <|user|> and <|observation|>): generation stops there as at an eos id.
  virtual std::vector<std::string> end_of_turn_tokens() const { return {}; }

  // The conversation as parts. Throws for an empty conversation or a role the template has
  // no place for.
  virtual std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const = 0;

 protected:
  // Whether adjacent text parts are encoded as one string (byte-level BPE sees the whole
  // rendered text) or one by one (ChatGLM's sentencepiece encodes each piece separately).
  virtual bool joins_text() const { return true; }
};

// "qwen", "chatglm3", "glm4", "chatglm2" or "none"; any other name is an error listing these.
std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name);
std::string chat_template_names();

// The template for a model: from config.json's model_type (qwen2, qwen3 -> qwen; glm, glm4
// -> glm4; chatglm -> glm4 for GLM-4's 151k vocabulary, else chatglm2 or chatglm3 as the
// shipped tokenizer_config.json's chat_template shows, chatglm3 when it has none).
std::string chat_template_name_for(std::string_view model_type, std::int64_t vocab_size,
                                   std::string_view shipped_template);
// The same, read from a model folder's config.json and tokenizer_config.json.
std::string chat_template_name_for_model(const std::string& model_dir);

// Templates' shared check: a non-empty conversation of the given roles only.
void require_roles(const std::vector<ChatMessage>& messages, std::string_view template_name,
                   const std::vector<std::string_view>& roles);

std::unique_ptr<ChatTemplate> make_qwen_chat_template();
std::unique_ptr<ChatTemplate> make_chatglm3_chat_template();
std::unique_ptr<ChatTemplate> make_glm4_chat_template();
std::unique_ptr<ChatTemplate> make_chatglm2_chat_template();

}  // namespace zt::models
