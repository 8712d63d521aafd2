// The prompts of `zerotune generate --input_file`: JSON Lines (or one JSON array), each
// entry a plain prompt or a conversation to answer, in the shapes users already have:
//   "text"                                   a JSON string: the prompt as it is
//   {"prompt": "..."}                        the same
//   {"instruction": "...", "input": "...", "system": "...", "history": [[q, a], ...]}   alpaca
//   {"messages": [{"role": ..., "content": ...}, ...]}                                   OpenAI/ShareGPT
//   {"conversations": [{"from": ..., "value": ...}, ...]}                                ShareGPT
// A message's content is a string or a list of text parts, and "developer" is the system role,
// as `zerotune serve` reads them (text/chat_template/openai_message.h). Conversations end with
// the turn to answer; a trailing assistant turn (a reference answer in an evaluation file) is
// dropped.
#pragma once

#include <string>
#include <vector>

#include "text/chat_template/chat_template.h"

namespace zt::cli {

struct PromptInput {
  bool is_chat = false;
  std::string text{};                           // plain prompt
  std::vector<models::ChatMessage> messages{};  // conversation
};

// Throws zt::Error naming the file, the line and what is wrong.
std::vector<PromptInput> read_prompt_file(const std::string& path);

}  // namespace zt::cli
