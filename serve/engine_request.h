// An API request as the engine's request: the prompt's tokens (chat messages through the
// model's chat template, as `zerotune chat` does; a completion's prompt as `zerotune
// generate --prompt` encodes it) and the generation options, the model's defaults
// (generation_config.json) overridden by the request's fields.
#pragma once

#include <cstdint>
#include <string>

#include "infer/engine.h"
#include "serve/request_parsing.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::serve {

// What the server knows of the model it serves.
struct ServedModel {
  std::string name;  // the id clients send as "model"
  const models::Tokenizer* tokenizer = nullptr;
  const models::ChatTemplate* chat_template = nullptr;  // as --enable_thinking renders
  bool enable_thinking = true;                          // --enable_thinking
  // The template with enable_thinking the other way, for a request whose
  // chat_template_kwargs.enable_thinking differs from the server's.
  const models::ChatTemplate* other_thinking_template = nullptr;
  models::GenerationOptions defaults;  // stop ids included
  bool limits_new_tokens = false;      // defaults.max_new_tokens caps requests without max_tokens
  // The most prompt and new tokens one request may have (the context after any prefix).
  std::int64_t max_request_tokens = 0;
  // Token ids a prompt sent as ids may hold: 0 to vocab_size - 1 (the tokenizer's and the
  // model's, the fewer).
  std::int64_t vocab_size = 0;
};

// Without max_tokens a request may fill the rest of the context (or the server's default
// max_new_tokens when it has one). temperature 0 is greedy;
// another temperature, or top_p, samples; sampling without a seed draws a fresh one. A prompt
// with no room left for one new token is an ApiError 400.
infer::GenerationRequest engine_request(const ApiRequest& request, const ServedModel& model);

}  // namespace zt::serve
