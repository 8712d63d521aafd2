// LLaMA-Factory's templates (its src/llamafactory/data/template.py), as data: the slots of each
// formatter, the tool format, the default system prompt, stop words, efficient eos and whether
// it is a ReasoningTemplate. One engine (llama_factory_template.cpp) renders them as
// Template._encode, encode_multiturn and encode_oneturn do; the specs are in
// llama_factory_templates.cpp, the tool formats (tool_utils.py) in llama_factory_tools.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/chat_template/chat_template.h"

namespace zt::models::llama_factory {

// A formatter's slots: each element is encoded by its own tokenizer call (Template.
// _convert_elements_to_ids), so text never joins across elements. "{{content}}" marks where
// the message goes; the spec's template tokens are split out of the element's literal text.
using Slots = std::vector<std::string>;

// tool_utils.py's formats that these templates use: DefaultToolUtils, QwenToolUtils,
// GLM4ToolUtils.
enum class ToolFormat { kDefault, kQwen, kGlm4 };

struct Spec {
  std::string name;
  Slots prefix, system, user, assistant, function, observation;
  ToolFormat tool_format = ToolFormat::kDefault;
  std::string default_system;
  std::vector<std::string> stop_words;
  std::vector<std::string> tokens;  // the template tokens its slots name
  bool efficient_eos = false;
  bool reasoning = false;  // template_class=ReasoningTemplate
};

// ToolFormatter.apply: the text appended to the system prompt for `tools` (OpenAI's function
// tools as JSON text).
std::string tool_prompt(ToolFormat format, const ChatTools& tools);

// FunctionFormatter's tool_utils.function_formatter for the calls of one message. `template_name`
// names the template in errors (GLM-4's format takes one call at a time).
std::string function_text(ToolFormat format, const std::vector<ToolCall>& calls, const std::string& template_name);

// The calls as LLaMA-Factory's converters write a function message: json.dumps of
// [{"name", "arguments"}] (one call alone as an object, as ShareGPT's function_call holds it).
std::string calls_json(const std::vector<ToolCall>& calls);

std::unique_ptr<ChatTemplate> make_template(const Spec& spec, const ChatTemplateOptions& options);

}  // namespace zt::models::llama_factory
