#include "text/chat_template/template_choice.h"

#include "runtime/error.h"
#include "runtime/log.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer_files.h"

namespace zt::models {
namespace {

// The built-in template for a model_type when the folder's own template says nothing.
std::optional<std::string> template_for_model_type(std::string_view model_type, std::int64_t vocab_size) {
  if (model_type == "qwen2" || model_type == "qwen2_moe") return "qwen";  // Qwen2 and Qwen2.5
  if (model_type == "qwen3" || model_type == "qwen3_moe") return "qwen3";
  if (model_type == "glm" || model_type == "glm4") return "glm4";
  if (model_type == "chatglm") return vocab_size >= 150000 ? "glm4" : "chatglm3";
  return std::nullopt;
}

// tokenizer_config.json's "chat_template": a string, or a list of {"name", "template"} of
// which transformers uses "default".
std::string template_in_tokenizer_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("chat_template")) return "";
  const nlohmann::json& value = config.at("chat_template");
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return "";
  for (const nlohmann::json& entry : value)
    if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
        entry.at("template").is_string())
      return entry.at("template").get<std::string>();
  return "";
}

}  // namespace

std::string shipped_chat_template(const std::string& model_dir) {
  const std::string jinja = model_dir + "/chat_template.jinja";
  if (tokenizer_file_exists(jinja)) return read_tokenizer_file(jinja);
  const std::string tokenizer_config = model_dir + "/tokenizer_config.json";
  if (tokenizer_file_exists(tokenizer_config)) {
    std::string text = template_in_tokenizer_config(read_tokenizer_json(tokenizer_config));
    if (!text.empty()) return text;
  }
  const std::string processor_template = model_dir + "/chat_template.json";
  if (tokenizer_file_exists(processor_template))
    return template_in_tokenizer_config(read_tokenizer_json(processor_template));
  return "";
}

std::optional<std::string> recognise_chat_template(std::string_view text) {
  auto has = [&](std::string_view s) { return text.find(s) != std::string_view::npos; };
  if (has("<|im_start|>")) {
    if (has("<|vision_start|>") || has("<|audio_bos|>")) return std::nullopt;  // Qwen's multimodal models
    if (has("enable_thinking") && has("<think>")) return "qwen3";
    // Thinking-only templates open the think block in the generation prompt: Qwen3's
    // Thinking-2507 (Qwen3's reasoning_content and last query), QwQ (every answer's reasoning cut).
    if (has(R"('<|im_start|>assistant\n<think>\n')")) {
      if (has("reasoning_content") && has("last_query_index")) return "qwen3_thinking";
      if (has("split('</think>')[-1]") && !has("reasoning_content")) return "qwq";
    }
    // Qwen3's Instruct-2507 models: Qwen3's text without enable_thinking, its generation prompt
    // not opening the think block.
    if (has("reasoning_content") && has("last_query_index") && has(R"('<|im_start|>assistant\n' })") &&
        !has(R"('<|im_start|>assistant\n<think>)"))
      return "qwen3_instruct";
    if (has("<think>")) return std::nullopt;  // reasoning written another way
    if (has("You are Qwen, created by Alibaba Cloud. You are a helpful assistant.")) return "qwen";
    if (has("You are a helpful assistant.")) return "qwen2";
    if (has("Please reason step by step, and put your final answer within")) return "qwen2.5_math";
    // Qwen3's Instruct-2507 text without think blocks: Qwen3's tool calls (arguments given as a
    // string written as they are), no default system prompt.
    if (has(R"('<tool_call>\n{"name": "')") && has("tool_call.arguments is string")) return "qwen3_instruct_plain";
    return std::nullopt;
  }
  // DeepSeek-R1-Distill (Qwen and Llama alike): the last system message's text after the bos,
  // every answer's reasoning cut. DeepSeek-R1's and V3's own templates join the system messages
  // (is_first_sp) and are another layout.
  if (has("<｜User｜>") && has("<｜Assistant｜>") && has("split('</think>')[-1]") &&
      has("{% set ns.system_prompt = message['content'] %}") && !has("is_first_sp"))
    return has(R"({{'<｜Assistant｜><think>\n'}})") ? "deepseek_r1_distill" : "deepseek_r1_distill_initial";
  if (has("[gMASK]<sop>") && has("<|assistant|>")) {
    // GLM-4.5 and later (and GLM-Z1) think and call tools in XML: another layout.
    if (has("<think>") || has("<tool_call>")) return std::nullopt;
    return "glm4";
  }
  if (has("[gMASK]sop") && has("<|assistant|>")) return "chatglm3";
  if (has("[Round") && has("问：")) return "chatglm2";
  return std::nullopt;
}

ChatTemplateChoice choose_chat_template(std::string_view shipped_template, std::string_view model_type,
                                        std::int64_t vocab_size, const std::string& where) {
  if (std::optional<std::string> name = recognise_chat_template(shipped_template)) return {*name, ""};
  const std::string by_type = template_for_model_type(model_type, vocab_size).value_or("");
  const std::string choose = "pass --template NAME to choose (" + chat_template_names() + ")";
  const std::string what = shipped_template.empty()
                               ? where + " ships no chat template"
                               : where + " ships a chat template that none of the built-in templates renders";
  if (by_type.empty())
    zt::fail(what + " and model_type '" + std::string(model_type) + "' has no built-in template: " + choose);
  return {by_type, what + "; using '" + by_type + "', the built-in template for model_type '" +
                       std::string(model_type) +
                       "', whose prompts may differ from the ones this model learned: " + choose};
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
  const ChatTemplateChoice choice = choose_chat_template(shipped_chat_template(model_dir),
                                                         config.at("model_type").get<std::string>(), vocab, model_dir);
  if (!choice.warning.empty()) ZT_WARN(choice.warning);
  return choice.name;
}

}  // namespace zt::models
