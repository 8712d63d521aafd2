// A chat message's role and content as OpenAI's chat format sends them, read one way for
// `zerotune serve`'s requests (serve/request_parsing.cpp) and `zerotune generate --input_file`'s
// conversations (cli/prompt_file.cpp), so that a conversation the server takes, the file takes
// too and renders to the same prompt.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace zt::models {

// The role a message's `role` names: "developer", OpenAI's newer name for the system role, is
// "system"; any other name is itself, for the caller to accept or refuse.
std::string openai_role(const std::string& name);

// A message's content: a string, or a list of text parts (OpenAI's content parts), joined with a
// newline between parts as vLLM joins them for a template that prints the content as a string.
// Throws zt::Error beginning with `name` (how the caller's messages name the field) for any
// other value, or a part that is not text: the models zerotune runs read text only.
std::string openai_content_text(const nlohmann::json& content, const std::string& name);

}  // namespace zt::models
