#include "text/chat_template/chat_template.h"

#include <array>

#include "runtime/error.h"
#include "text/chat_template/template_names.h"

namespace zt::models {
namespace {

// Plain concatenation of the contents: for base models and data that carries its own format.
class NoChatTemplate final : public ChatTemplate {
 public:
  std::string_view name() const override { return "none"; }
  std::string_view origin() const override { return "zerotune's"; }
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
  std::string_view alias;  // another name for the same template; may be empty
  std::unique_ptr<ChatTemplate> (*make)();
};

// The model families' own templates, by the names chat_template_name_for_model() gives.
const std::array<BuiltIn, 15> kModelTemplates = {{
    {"qwen", "qwen2.5", make_qwen2_5_chat_template},
    {"qwen2", "", make_qwen2_chat_template},
    {"qwen2.5_math", "", make_qwen2_5_math_chat_template},
    {"qwq", "", make_qwq_chat_template},
    {"qwen3", "", [] { return make_qwen3_chat_template(Qwen3Thinking::kOptional); }},
    {"qwen3_nothink", "", [] { return make_qwen3_chat_template(Qwen3Thinking::kOff); }},
    {"qwen3_thinking", "", [] { return make_qwen3_chat_template(Qwen3Thinking::kAlways); }},
    {"qwen3_instruct", "", [] { return make_qwen3_chat_template(Qwen3Thinking::kInstruct); }},
    {"qwen3_instruct_plain", "", [] { return make_qwen3_chat_template(Qwen3Thinking::kPlain); }},
    {"deepseek_r1_distill", "", [] { return make_deepseek_r1_distill_chat_template(true); }},
    {"deepseek_r1_distill_initial", "", [] { return make_deepseek_r1_distill_chat_template(false); }},
    {"glm4", "", make_glm4_chat_template},
    {"chatglm3", "", make_chatglm3_chat_template},
    {"chatglm2", "", make_chatglm2_chat_template},
    {"none", "", make_no_chat_template},
}};

// Names LLaMA-Factory does not have (or no longer has): --template gives the model family's own
// template for them. qwen2.5 is Qwen2.5 Instruct's own, where `qwen` is LLaMA-Factory's.
const std::array<std::string_view, 4> kZerotuneNames = {"qwen2", "qwen2.5", "chatglm2", "none"};

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
  for (const auto& [at, label] : relabelled) out.at(at) = label;
  return out;
}

TokenId ChatTemplate::eos_id(const Tokenizer& tokenizer) const {
  const std::optional<TokenId> eos = tokenizer.special_ids().eos;
  if (!eos)
    zt::fail("chat template '" + std::string(name()) +
             "' ends answers with the tokenizer's eos, but the tokenizer read "
             "from " +
             tokenizer.source() + " names no eos_token (tokenizer_config.json)");
  return *eos;
}

TokenId ChatTemplate::token_id(const Tokenizer& tokenizer, const ChatPart& part) const {
  if (part.eos) return eos_id(tokenizer);
  const std::optional<TokenId> id = tokenizer.token_to_id(part.text);
  if (!id)
    zt::fail("chat template '" + std::string(name()) + "' needs the token '" + part.text +
             "', which the tokenizer read from " + tokenizer.source() +
             " does not have: choose the template of this model (" + chat_template_names() + ")");
  return *id;
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
  std::optional<std::size_t> tail_begin;
  for (const ChatPart& part : parts(messages, add_generation_prompt, tools)) {
    if (!joins_text() || part.is_token || part.answer != pending_answer) flush();
    if (part.kept_by_cut && !tail_begin) tail_begin = out.ids.size();
    if (!part.is_token) {
      pending += part.text;
      pending_answer = part.answer;
      continue;
    }
    const TokenId id = token_id(tokenizer, part);
    if (part.labelled_eos) out.relabelled.emplace_back(out.ids.size(), eos_id(tokenizer));
    out.ids.push_back(id);
    out.answer.push_back(part.answer);
  }
  flush();
  if (tail_begin) out.kept_tail = out.ids.size() - *tail_begin;
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

std::string model_family_template_names() {
  std::string own;
  for (std::string_view name : kZerotuneNames) own += (own.empty() ? "" : ", ") + std::string(name);
  return own;
}

std::vector<std::string> accepted_chat_template_names() {
  std::vector<std::string> names = llama_factory_template_name_list();
  names.insert(names.end(), kZerotuneNames.begin(), kZerotuneNames.end());
  return names;
}

std::string chat_template_names() {
  return llama_factory_template_names() + " (LLaMA-Factory's), " + model_family_template_names() +
         " (the model family's own template)";
}

std::string chat_template_warning(std::string_view name) {
  if (name != "chatglm2") return "";
  return "template chatglm2 renders ChatGLM2's own prompt ([Round 1] ... rounds, the last answer trained): "
         "LLaMA-Factory 0.9.5 dropped its chatglm2 template, and its older one wrote [Round 0] first and trained "
         "every answer";
}

std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name, const ChatTemplateOptions& options) {
  if (auto llama_factory = make_llama_factory_template(name, options)) return llama_factory;
  for (std::string_view own : kZerotuneNames)
    if (name == own) return make_model_chat_template(name);
  zt::fail("unknown chat template '" + std::string(name) + "'; accepted: " + chat_template_names() +
           ". zerotune renders no other LLaMA-Factory template (llama3, mistral, gemma, deepseek3, ...): it trains "
           "Qwen and GLM models");
}

std::unique_ptr<ChatTemplate> make_model_chat_template(std::string_view name) {
  for (const BuiltIn& t : kModelTemplates)
    if (name == t.name || (!t.alias.empty() && name == t.alias)) return t.make();
  std::string names;
  for (const BuiltIn& t : kModelTemplates) names += (names.empty() ? "" : ", ") + std::string(t.name);
  zt::fail("no model chat template named '" + std::string(name) + "'; accepted: " + names);
}

std::unique_ptr<ChatTemplate> make_run_chat_template(std::string_view name, const std::string& model_dir,
                                                     const ChatTemplateOptions& options) {
  if (!name.empty()) return make_chat_template(name, options);
  const std::string own = chat_template_name_for_model(model_dir);
  // Qwen3's Jinja tests `enable_thinking is false`: null thinks, as true does.
  if (own == "qwen3" && options.enable_thinking == false) return make_model_chat_template("qwen3_nothink");
  return make_model_chat_template(own);
}

std::unique_ptr<ChatTemplate> make_no_chat_template() { return std::make_unique<NoChatTemplate>(); }

}  // namespace zt::models
