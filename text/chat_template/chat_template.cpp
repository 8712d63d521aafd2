#include "text/chat_template/chat_template.h"

#include <array>

#include "runtime/error.h"
#include "text/tokenizer/tokenizer_files.h"

namespace zt::models {
namespace {

// Plain concatenation of the contents: for base models and data that carries its own format.
class NoChatTemplate final : public ChatTemplate {
 public:
  std::string_view name() const override { return "none"; }
  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool) const override {
    require_roles(messages, name(), {"system", "user", "assistant"});
    std::vector<ChatPart> out;
    for (const ChatMessage& m : messages) out.push_back({m.content, false, m.role == "assistant", std::nullopt});
    return out;
  }
};

constexpr std::array<std::string_view, 5> kNames = {"qwen", "chatglm3", "glm4", "chatglm2", "none"};

}  // namespace

std::vector<std::int64_t> EncodedConversation::labels() const {
  std::vector<std::int64_t> out(ids.size(), -100);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (answer[i]) out[i] = ids[i];
  return out;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string text;
  for (const ChatPart& part : parts(messages, add_generation_prompt)) text += part.shown ? *part.shown : part.text;
  return text;
}

EncodedConversation ChatTemplate::encode(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                         bool add_generation_prompt) const {
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
  for (const ChatPart& part : parts(messages, add_generation_prompt)) {
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

std::string chat_template_names() {
  std::string names;
  for (std::string_view name : kNames) names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name) {
  if (name == "qwen") return make_qwen_chat_template();
  if (name == "chatglm3") return make_chatglm3_chat_template();
  if (name == "glm4") return make_glm4_chat_template();
  if (name == "chatglm2") return make_chatglm2_chat_template();
  if (name == "none") return std::make_unique<NoChatTemplate>();
  zt::fail("unknown chat template '" + std::string(name) + "'; accepted: " + chat_template_names());
}

std::string chat_template_name_for(std::string_view model_type, std::int64_t vocab_size,
                                   std::string_view shipped_template) {
  if (model_type == "qwen2" || model_type == "qwen3") return "qwen";
  if (model_type == "glm" || model_type == "glm4") return "glm4";
  if (model_type == "chatglm") {
    if (vocab_size >= 150000) return "glm4";
    if (shipped_template.find("[Round") != std::string_view::npos) return "chatglm2";
    return "chatglm3";
  }
  zt::fail("no built-in chat template for model_type '" + std::string(model_type) +
           "' (known: qwen2, qwen3, glm, glm4, chatglm); choose one by name: " + chat_template_names());
}

std::string chat_template_name_for_model(const std::string& model_dir) {
  const std::string config_path = model_dir + "/config.json";
  const nlohmann::json config = read_tokenizer_json(config_path);
  if (!config.is_object() || !config.contains("model_type") || !config.at("model_type").is_string())
    zt::fail(config_path + ": no string 'model_type' to choose the chat template from");
  std::int64_t vocab = 0;
  for (const char* key : {"padded_vocab_size", "vocab_size"})
    if (vocab == 0 && config.contains(key) && config.at(key).is_number_integer())
      vocab = config.at(key).get<std::int64_t>();
  std::string shipped;
  const std::string tokenizer_config = model_dir + "/tokenizer_config.json";
  if (tokenizer_file_exists(tokenizer_config)) {
    const nlohmann::json json = read_tokenizer_json(tokenizer_config);
    if (json.is_object() && json.contains("chat_template") && json.at("chat_template").is_string())
      shipped = json.at("chat_template").get<std::string>();
  }
  return chat_template_name_for(config.at("model_type").get<std::string>(), vocab, shipped);
}

}  // namespace zt::models
