// The names --template accepts, as one list: make_chat_template looks a name up in it, its
// unknown-name error prints it, and the commands' help (train, generate, chat, serve, evaluate)
// prints it, beside llama_factory_template_names() (chat_template.h). Kept apart from
// chat_template.h so that help reads the names without the template classes.
#pragma once

#include <string>
#include <vector>

namespace zt::models {

// LLaMA-Factory's templates zerotune renders as it does (llama_factory_templates.cpp's specs).
std::vector<std::string> llama_factory_template_name_list();
// zerotune's names for model families' own templates that LLaMA-Factory does not have, comma
// separated: "qwen2, qwen2.5, ..." (chat_template.cpp).
std::string model_family_template_names();
// Every name --template accepts, LLaMA-Factory's first.
std::vector<std::string> accepted_chat_template_names();

}  // namespace zt::models
