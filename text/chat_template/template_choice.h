// Which built-in chat template renders what a model folder's own chat template renders. The
// folder's template text (chat_template.jinja, as transformers 4.43+ saves it, else
// tokenizer_config.json's "chat_template") is recognised by its distinctive features; where
// it matches none, the template closest to config.json's model_type is used with a warning,
// and where none fits the user is asked for --template.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zt::models {

// The folder's chat template text; "" when it ships none.
std::string shipped_chat_template(const std::string& model_dir);

// The built-in template that renders as `text` does (qwen, qwen2, qwen2.5_math, qwq, qwen3,
// qwen3_thinking, qwen3_instruct, qwen3_instruct_plain, deepseek_r1_distill,
// deepseek_r1_distill_initial, glm4, chatglm3, chatglm2); nullopt when its features match none.
std::optional<std::string> recognise_chat_template(std::string_view text);

struct ChatTemplateChoice {
  std::string name;
  std::string warning;  // why the choice may not render as the model's own template; "" when it does
};

// From the shipped template text, else config.json's model_type (and the vocabulary size that
// tells GLM-4 from ChatGLM2/3, which share model_type "chatglm"). `where` names the folder in
// messages. Throws, asking for --template, when neither gives a template.
ChatTemplateChoice choose_chat_template(std::string_view shipped_template, std::string_view model_type,
                                        std::int64_t vocab_size, const std::string& where);

// The same, read from a model folder; a warning is logged.
std::string chat_template_name_for_model(const std::string& model_dir);

}  // namespace zt::models
