// The LLaMA-Factory templates zerotune implements, copied from the register_template calls of
// its src/llamafactory/data/template.py (the families zerotune trains: Qwen2/2.5/3, GLM-4,
// ChatGLM3, and `empty` for base models). Slots are written as there; an element that is a
// {"token": ...} dict there is a string of the token alone here, split out by name either way.
#include "text/chat_template/llama_factory_template.h"
#include "text/chat_template/template_names.h"

namespace zt::models {
namespace {

using llama_factory::Spec;
using llama_factory::ToolFormat;

// The qwen template's formatters ("copied from chatml template"), shared by qwen3 and
// qwen3_nothink ("copied from qwen template").
Spec qwen_spec(std::string name, std::string default_system, bool reasoning) {
  Spec spec;
  spec.name = std::move(name);
  spec.user = {"<|im_start|>user\n{{content}}<|im_end|>\n<|im_start|>assistant\n"};
  spec.assistant = {"{{content}}<|im_end|>\n"};
  spec.system = {"<|im_start|>system\n{{content}}<|im_end|>\n"};
  spec.function = {"{{content}}<|im_end|>\n"};
  spec.observation = {
      "<|im_start|>user\n<tool_response>\n{{content}}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"};
  spec.tool_format = ToolFormat::kQwen;
  spec.default_system = std::move(default_system);
  spec.stop_words = {"<|im_end|>"};  // replace_eos: <|im_end|> is also the eos LLaMA-Factory sets
  spec.tokens = {"<|im_start|>", "<|im_end|>"};
  spec.reasoning = reasoning;
  return spec;
}

Spec glm4_spec() {
  Spec spec;
  spec.name = "glm4";
  spec.prefix = {"[gMASK]<sop>"};
  spec.user = {"<|user|>\n{{content}}<|assistant|>"};
  spec.assistant = {"\n{{content}}"};
  spec.system = {"<|system|>\n{{content}}"};
  spec.function = {"{{content}}"};
  spec.observation = {"<|observation|>\n{{content}}<|assistant|>"};
  spec.tool_format = ToolFormat::kGlm4;
  spec.stop_words = {"<|user|>", "<|observation|>"};
  spec.tokens = {"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"};
  spec.efficient_eos = true;
  return spec;
}

// As glm4 (its function slot, tool format, stop words and efficient eos), with each token and
// "\n" an element of its own, encoded apart as sentencepiece pieces.
Spec chatglm3_spec() {
  Spec spec = glm4_spec();
  spec.name = "chatglm3";
  spec.prefix = {"[gMASK]", "sop"};
  spec.user = {"<|user|>", "\n", "{{content}}", "<|assistant|>"};
  spec.assistant = {"\n", "{{content}}"};
  spec.system = {"<|system|>", "\n", "{{content}}"};
  spec.observation = {"<|observation|>", "\n", "{{content}}", "<|assistant|>"};
  spec.tokens = {"[gMASK]", "sop", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"};
  return spec;
}

// register_template's defaults with format_assistant "{{content}}" (no eos): the contents
// joined; tools and calls in the default (ReAct) format.
Spec empty_spec() {
  Spec spec;
  spec.name = "empty";
  spec.user = spec.assistant = spec.system = spec.function = spec.observation = {"{{content}}"};
  return spec;
}

// Built on first use, so that no other static initialiser can see them unbuilt.
const std::vector<Spec>& specs() {
  static const std::vector<Spec> all = {
      qwen_spec("qwen", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", false),
      qwen_spec("qwen3", "", true),
      qwen_spec("qwen3_nothink", "", false),
      glm4_spec(),
      chatglm3_spec(),
      empty_spec(),
  };
  return all;
}

}  // namespace

std::unique_ptr<ChatTemplate> make_llama_factory_template(std::string_view name, const ChatTemplateOptions& options) {
  for (const Spec& spec : specs())
    if (spec.name == name) return llama_factory::make_template(spec, options);
  return nullptr;
}

std::vector<std::string> llama_factory_template_name_list() {
  std::vector<std::string> names;
  for (const Spec& spec : specs()) names.push_back(spec.name);
  return names;
}

std::string llama_factory_template_names() {
  std::string names;
  for (const std::string& name : llama_factory_template_name_list()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace zt::models
