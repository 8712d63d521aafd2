// Built-in chat templates, of two kinds. A template named by --template (LLaMA-Factory's
// `template:`) renders what LLaMA-Factory's template of that name renders (its data/template.py:
// make_chat_template). The template of a model folder renders what the model family's own chat
// template renders (the Jinja text of its tokenizer_config.json, or its tokenizer code where the
// Jinja has no place for tools: make_model_chat_template). Both encode a conversation to ids with
// the labels of the tokens the model is trained to produce. See docs/TOKENIZERS.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
  // A token: the tokenizer's eos, whatever its name (`text` unused).
  bool eos = false;
  // A prompt token labelled with the tokenizer's eos: LLaMA-Factory's efficient eos trains the
  // first token of the turn after an answer to produce eos there.
  bool labelled_eos = false;
  // Kept whole by a cut to max_length: LLaMA-Factory appends its efficient eos after cutting.
  bool kept_by_cut = false;
};

inline ChatPart chat_text(std::string text, bool answer) { return {std::move(text), false, answer, std::nullopt}; }
inline ChatPart chat_token(std::string name, bool answer) { return {std::move(name), true, answer, std::nullopt}; }
inline ChatPart chat_eos(bool answer) {
  ChatPart part = chat_token("", answer);
  part.eos = true;
  return part;
}

struct EncodedConversation {
  std::vector<TokenId> ids;
  std::vector<bool> answer;  // per id: part of an assistant answer
  // Prompt ids labelled with another id (ChatPart::labelled_eos): (position, label).
  std::vector<std::pair<std::size_t, TokenId>> relabelled;
  std::size_t kept_tail = 0;  // ids at the end that a cut keeps (ChatPart::kept_by_cut)
  // ids where `answer`, the `relabelled` labels, -100 elsewhere: the labels of supervised
  // fine-tuning.
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
  // Whether the assistant writes its tool calls as Qwen's <tool_call> blocks, the format
  // serve/tool_calls.h reads out of answers.
  virtual bool writes_tool_call_blocks() const { return false; }
  // Whether the assistant thinks in a <think>…</think> block before its answer (Qwen3, QwQ,
  // DeepSeek-R1's distills, LLaMA-Factory's reasoning templates): what serve splits out as
  // reasoning_content.
  virtual bool writes_think_blocks() const { return false; }

  // The conversation as parts. Throws for an empty conversation, a role the template has no
  // place for, or tools in a template without a tool format.
  virtual std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                      const ChatTools& tools) const = 0;

  // Why --train_on_prompt cannot be used with this template; "" when it can.
  virtual std::string train_on_prompt_refusal() const { return ""; }
  // Whose layout it renders, for logs: "LLaMA-Factory's", "the model's own", "zerotune's".
  virtual std::string_view origin() const { return "the model's own"; }

 protected:
  // Whether adjacent text parts are encoded as one string (byte-level BPE sees the whole
  // rendered text) or one by one (ChatGLM's sentencepiece encodes each piece separately).
  virtual bool joins_text() const { return true; }

 private:
  TokenId eos_id(const Tokenizer& tokenizer) const;
  TokenId token_id(const Tokenizer& tokenizer, const ChatPart& part) const;
};

// LLaMA-Factory's settings of a reasoning template (qwen3): its enable_thinking (true, false,
// or null, which keeps the thinking given but adds the empty block as prompt).
struct ChatTemplateOptions {
  std::optional<bool> enable_thinking = true;
};

// The template a name given by --template (LLaMA-Factory's `template:`) stands for:
// LLaMA-Factory's qwen, qwen3, qwen3_nothink, glm4, chatglm3 and empty as its template.py
// renders them; zerotune's own qwen2, qwen2.5, chatglm2 and none as the model families' chat
// templates render them. Any other name is an error listing them.
std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name, const ChatTemplateOptions& options = {});
std::string chat_template_names();
// A warning for a name whose template differs from what LLaMA-Factory's template of that name
// rendered (chatglm2, which LLaMA-Factory dropped); "" for the others.
std::string chat_template_warning(std::string_view name);

// The model family's own chat template, by the name chat_template_name_for_model() gives:
// qwen (Qwen2.5, alias qwen2.5), qwen2, qwen2.5_math (Qwen2.5-Math-Instruct), qwen3,
// qwen3_nothink (Qwen3 with enable_thinking false), qwen3_thinking (Qwen3's Thinking-2507 models),
// qwen3_instruct and qwen3_instruct_plain (the Instruct-2507 models' two texts), qwq (QwQ-32B),
// deepseek_r1_distill and deepseek_r1_distill_initial (DeepSeek-R1-Distill-Qwen's two revisions),
// glm4, chatglm3, chatglm2, none.
std::unique_ptr<ChatTemplate> make_model_chat_template(std::string_view name);

// The template of a run (train, chat, generate, serve): --template `name`'s (make_chat_template,
// with `options`), or, when `name` is empty, the model's own (make_model_chat_template of
// chat_template_name_for_model(model_dir)), where enable_thinking false renders Qwen3's own as
// its chat template does given enable_thinking=False (qwen3_nothink).
std::unique_ptr<ChatTemplate> make_run_chat_template(std::string_view name, const std::string& model_dir,
                                                     const ChatTemplateOptions& options = {});

// Templates' shared checks: a non-empty conversation of the given roles only; no tools.
void require_roles(const std::vector<ChatMessage>& messages, std::string_view template_name,
                   const std::vector<std::string_view>& roles);
void require_no_tools(const std::vector<ChatMessage>& messages, const ChatTools& tools, std::string_view template_name);

std::unique_ptr<ChatTemplate> make_qwen2_chat_template();
std::unique_ptr<ChatTemplate> make_qwen2_5_chat_template();
std::unique_ptr<ChatTemplate> make_qwq_chat_template();
std::unique_ptr<ChatTemplate> make_qwen2_5_math_chat_template();
// DeepSeek-R1-Distill's template (<｜User｜>/<｜Assistant｜> turns after the bos): its revision whose
// generation prompt opens the think block (`opens_think`, "<｜Assistant｜><think>\n") or the first
// one's ("<｜Assistant｜>").
std::unique_ptr<ChatTemplate> make_deepseek_r1_distill_chat_template(bool opens_think);
// Qwen3's template: the hybrid models' (kOptional, thinking unless told not to), the same given
// enable_thinking=false (kOff), the Thinking-2507 models' (kAlways: the generation prompt opens
// the think block), the Instruct-2507 models' (kInstruct: Qwen3's text without enable_thinking,
// rendering as kOptional; kPlain: their text without think blocks, an answer written as given).
enum class Qwen3Thinking { kOptional, kOff, kAlways, kInstruct, kPlain };
std::unique_ptr<ChatTemplate> make_qwen3_chat_template(Qwen3Thinking thinking);
std::unique_ptr<ChatTemplate> make_chatglm3_chat_template();
std::unique_ptr<ChatTemplate> make_glm4_chat_template();
std::unique_ptr<ChatTemplate> make_chatglm2_chat_template();
std::unique_ptr<ChatTemplate> make_no_chat_template();
// LLaMA-Factory's template of `name`; nullptr when it is not one zerotune implements.
std::unique_ptr<ChatTemplate> make_llama_factory_template(std::string_view name, const ChatTemplateOptions& options);
// The names make_llama_factory_template() knows, comma separated.
std::string llama_factory_template_names();

}  // namespace zt::models
