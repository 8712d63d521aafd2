// The engine of LLaMA-Factory's templates: a conversation rendered as its Template._encode
// renders the messages its converters align, with ReasoningTemplate's thinking rules and the
// supervised processor's labels. Each message becomes its formatter's elements; the prompt
// messages (user, tool results) are not trained, the answers (assistant, tool calls) are.
#include "text/chat_template/llama_factory_template.h"
#include "runtime/error.h"

namespace zt::models::llama_factory {
namespace {

enum class Role { kUser, kAssistant, kFunction, kObservation };

// A message as LLaMA-Factory's converters align it (user, assistant, function, observation).
struct Message {
  Role role = Role::kUser;
  std::string content;          // for a function message: the text before its calls
  std::vector<ToolCall> calls;  // a function message's calls
  std::size_t source = 0;       // the index of the ChatMessage it came from, for errors
};

struct Aligned {
  std::string system;
  std::vector<Message> messages;
};

// register_template's default thought_words.
const std::string kThoughtOpen = "<think>\n";
const std::string kThoughtClose = "\n</think>\n\n";
const std::string kEmptyThought = kThoughtOpen + kThoughtClose;  // Template.add_thought()

// Template.remove_thought: every "<think>\n...\n</think>\n\n" (shortest match) removed, then the
// leading newlines.
std::string remove_thought(const std::string& content) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t open = content.find(kThoughtOpen, at);
    const std::size_t close =
        open == std::string::npos ? open : content.find(kThoughtClose, open + kThoughtOpen.size());
    if (close == std::string::npos) break;
    out.append(content, at, open - at);
    at = close + kThoughtClose.size();
  }
  out.append(content, at);
  return out.substr(std::min(out.find_first_not_of('\n'), out.size()));
}

// ReasoningTemplate's test for a message that brings its own thinking.
bool has_thought(const Message& m) {
  const std::string content = m.role == Role::kFunction ? m.content + calls_json(m.calls) : m.content;
  return content.find("<think>") != std::string::npos || content.find("</think>") != std::string::npos;
}

// reasoning_content, which LLaMA-Factory's data has no field for, is written where its data
// holds thinking: at the start of the content, in the thought words.
std::string with_reasoning(const ChatMessage& m, bool reasoning) {
  if (!reasoning || !m.reasoning_content) return m.content;
  return kThoughtOpen + *m.reasoning_content + kThoughtClose + m.content;
}

// The messages as LLaMA-Factory's converters align them: the system prompt apart, an assistant
// message with tool calls a function message, consecutive tool results one observation joined
// as its OpenAI converter joins them; then user/observation and assistant/function alternate.
Aligned align(const std::vector<ChatMessage>& messages, bool reasoning, const std::string& name) {
  Aligned out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      ZT_REQUIRE(i == 0, "LLaMA-Factory's template '" + name + "': message " + std::to_string(i) +
                             " is a system message; the system prompt comes first or not at all");
      out.system = m.content;
    } else if (m.role == "tool" || m.role == "observation") {
      if (!out.messages.empty() && out.messages.back().role == Role::kObservation)
        out.messages.back().content += "\n</tool_response>\n<tool_response>\n" + m.content;
      else
        out.messages.push_back({Role::kObservation, m.content, {}, i});
    } else if (m.role == "assistant") {
      out.messages.push_back(
          {m.tool_calls.empty() ? Role::kAssistant : Role::kFunction, with_reasoning(m, reasoning), m.tool_calls, i});
    } else {
      out.messages.push_back({Role::kUser, m.content, {}, i});
    }
  }
  for (std::size_t i = 0; i < out.messages.size(); ++i) {
    const Role role = out.messages[i].role;
    const bool answer = role == Role::kAssistant || role == Role::kFunction;
    ZT_REQUIRE(answer == (i % 2 == 1),
               "LLaMA-Factory's template '" + name + "' takes a conversation in pairs, a user turn (or tool results) " +
                   "then the assistant's answer (or its tool calls); message " +
                   std::to_string(out.messages[i].source) + " is " +
                   (answer ? "an answer where a user turn belongs" : "a user turn where an answer belongs"));
  }
  ZT_REQUIRE(!out.messages.empty(), "LLaMA-Factory's template '" + name + "': the conversation has no user turn");
  return out;
}

class LlamaFactoryTemplate final : public ChatTemplate {
 public:
  LlamaFactoryTemplate(Spec spec, ChatTemplateOptions options)
      : spec_(std::move(spec)), enable_thinking_(options.enable_thinking) {}

  std::string_view name() const override { return spec_.name; }
  std::string_view origin() const override { return "LLaMA-Factory's"; }
  std::vector<std::string> end_of_turn_tokens() const override { return spec_.stop_words; }
  bool writes_tool_call_blocks() const override { return spec_.tool_format == ToolFormat::kQwen; }
  bool writes_think_blocks() const override { return spec_.reasoning; }

  std::string train_on_prompt_refusal() const override {
    if (!spec_.efficient_eos) return "";
    return "LLaMA-Factory's template '" + spec_.name +
           "' trains eos in place of the first token of each later turn (efficient_eos), and LLaMA-Factory refuses "
           "train_on_prompt with it (\"Current template does not support `train_on_prompt`\"); leave --template out "
           "to train with the model's own template";
  }

  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const ChatTools& tools) const override {
    require_roles(messages, name(), {"system", "user", "assistant", "tool", "observation"});
    Aligned aligned = align(messages, spec_.reasoning, spec_.name);
    std::vector<Message>& turns = aligned.messages;
    ZT_REQUIRE(!add_generation_prompt || turns.size() % 2 == 1,
               "LLaMA-Factory's template '" + spec_.name +
                   "' prompts for an answer after a user turn or tool results; this conversation ends with an answer");
    drop_thoughts(turns, add_generation_prompt);
    std::vector<ChatPart> out;
    for (std::size_t i = 0; i < turns.size(); ++i) {
      const std::size_t first = out.size();
      if (i == 0) append_head(aligned.system, tools, out);
      append_message(turns[i], i % 2 == 1, out);
      if (spec_.efficient_eos && i > 0 && i % 2 == 0) out.at(first).labelled_eos = true;
      // encode_multiturn's empty thought per answer; encode_oneturn adds it to the prompt only.
      if (spec_.reasoning && !add_generation_prompt && i % 2 == 1 && !has_thought(turns[i]))
        add_empty_thought(out, first);
    }
    if (add_generation_prompt && spec_.reasoning && !thinking()) out.push_back(chat_text(kEmptyThought, false));
    if (spec_.efficient_eos && !add_generation_prompt && turns.size() % 2 == 0) {
      ChatPart eos = chat_eos(true);  // the supervised processor's final eos
      eos.shown = "";
      eos.kept_by_cut = true;
      out.push_back(std::move(eos));
    }
    return out;
  }

 protected:
  bool joins_text() const override { return false; }  // one tokenizer call per element

 private:
  bool thinking() const { return enable_thinking_.value_or(false); }  // `not self.enable_thinking` is false
  bool thinking_off() const { return enable_thinking_ == false; }     // `self.enable_thinking is False`

  // ReasoningTemplate: encode_multiturn removes every answer's thinking when enable_thinking is
  // False; encode_oneturn (a generation prompt) removes the earlier answers' (preserve_thinking
  // false: zerotune refuses the option).
  void drop_thoughts(std::vector<Message>& turns, bool generation) const {
    if (!spec_.reasoning || (!generation && !thinking_off())) return;
    for (std::size_t i = 1; i < turns.size(); i += 2) turns[i].content = remove_thought(turns[i].content);
  }

  // An answer without thinking gets the empty block: trained, at the start of the answer, when
  // thinking; prompt, after the turn before, otherwise.
  void add_empty_thought(std::vector<ChatPart>& out, std::size_t answer_begin) const {
    const auto at = out.begin() + static_cast<std::ptrdiff_t>(answer_begin);
    out.insert(at, chat_text(kEmptyThought, thinking()));
  }

  // The first message's prefix, and the system prompt (its default when the data has none)
  // with the tools' text after it, when there is either.
  void append_head(const std::string& system, const ChatTools& tools, std::vector<ChatPart>& out) const {
    append_slots(spec_.prefix, "", false, out);
    const std::string prompt = system.empty() ? spec_.default_system : system;
    if (!prompt.empty() || !tools.empty())
      append_slots(spec_.system, prompt + tool_prompt(spec_.tool_format, tools), false, out);
  }

  void append_message(const Message& m, bool answer, std::vector<ChatPart>& out) const {
    switch (m.role) {
      case Role::kUser:
        return append_slots(spec_.user, m.content, answer, out);
      case Role::kAssistant:
        return append_slots(spec_.assistant, m.content, answer, out);
      case Role::kObservation:
        return append_slots(spec_.observation, m.content, answer, out);
      case Role::kFunction:
        return append_slots(spec_.function, m.content + function_text(spec_.tool_format, m.calls, spec_.name), answer,
                            out);
    }
  }

  // StringFormatter.apply then _convert_elements_to_ids: each element with `content` in place of
  // its first "{{content}}", its template tokens by id, its text in one piece.
  void append_slots(const Slots& slots, const std::string& content, bool answer, std::vector<ChatPart>& out) const {
    for (const std::string& element : slots) {
      std::string text;
      auto flush = [&] {
        if (!text.empty()) out.push_back(chat_text(std::move(text), answer));
        text.clear();
      };
      const std::size_t slot = element.find("{{content}}");
      const std::string before = slot == std::string::npos ? element : element.substr(0, slot);
      split_tokens(before, text, answer, out, flush);
      if (slot != std::string::npos) {
        text += content;
        split_tokens(element.substr(slot + 11), text, answer, out, flush);
      }
      flush();
    }
  }

  // Literal slot text with the spec's template tokens split out as token parts.
  template <typename Flush>
  void split_tokens(const std::string& literal, std::string& text, bool answer, std::vector<ChatPart>& out,
                    Flush& flush) const {
    std::size_t at = 0;
    while (at < literal.size()) {
      std::size_t found = std::string::npos, length = 0;
      for (const std::string& token : spec_.tokens) {
        const std::size_t p = literal.find(token, at);
        if (p < found || (p == found && p != std::string::npos && token.size() > length)) {
          found = p;
          length = token.size();
        }
      }
      text.append(literal, at, found == std::string::npos ? std::string::npos : found - at);
      if (found == std::string::npos) return;
      flush();
      out.push_back(chat_token(literal.substr(found, length), answer));
      at = found + length;
    }
  }

  Spec spec_;
  std::optional<bool> enable_thinking_;
};

}  // namespace

std::unique_ptr<ChatTemplate> make_template(const Spec& spec, const ChatTemplateOptions& options) {
  return std::make_unique<LlamaFactoryTemplate>(spec, options);
}

}  // namespace zt::models::llama_factory
