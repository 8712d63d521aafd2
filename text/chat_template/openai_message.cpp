#include "text/chat_template/openai_message.h"

#include "runtime/error.h"

namespace zt::models {

using nlohmann::json;

std::string openai_role(const std::string& name) { return name == "developer" ? "system" : name; }

std::string openai_content_text(const json& content, const std::string& name) {
  if (content.is_string()) return content.get<std::string>();
  ZT_REQUIRE(content.is_array(), name + " must be a string or a list of parts");
  std::string text;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    // An assistant's refusal part (openai-python's assistant content) is its text, as vLLM reads it.
    const bool refusal = part.is_object() && part.value("type", json()) == "refusal";
    const char* key = refusal ? "refusal" : "text";
    ZT_REQUIRE(part.is_object() && (refusal || part.value("type", json()) == "text") && part.contains(key) &&
                   part[key].is_string(),
               name + " parts must be {\"type\": \"text\", \"text\": ...}: this model reads text only");
    if (i > 0) text += '\n';
    text += part[key].get<std::string>();
  }
  return text;
}

}  // namespace zt::models
