// An API request as the engine's request: the prompt's tokens (chat messages through the
// model's chat template, as `zerotune chat` does; a completion's prompt as `zerotune
// generate --prompt` encodes it) and the generation options, the model's defaults
// (generation_config.json) overridden by the request's fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "infer/engine.h"
#include "serve/request_parsing.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::serve {

// Which chat answers have their reasoning (the <think> block) sent apart, as
// `reasoning_content` (--reasoning_parser; vLLM's --reasoning-parser, which zerotune needs no
// name for since the template tells the format).
enum class ReasoningParser {
  kAuto,    // answers rendered by a template whose models think (ChatTemplate::writes_think_blocks)
  kNone,    // none: the think block stays in content
  kAlways,  // every chat answer (vLLM's parser names qwen3, deepseek_r1)
};

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
  ReasoningParser reasoning_parser = ReasoningParser::kAuto;
};

// A chat request whose answer's reasoning is split off (ReasoningParser): whether the answer
// starts inside a think block its prompt opened (qwen3_thinking, qwq). nullopt: not split (a
// completion, --reasoning_parser none, a template that does not think, thinking turned off by
// enable_thinking false where the prompt then does not open the block, as Qwen3's).
std::optional<bool> reasoning_start(const ApiRequest& request, const ServedModel& model);

// Without max_tokens a request may fill the rest of the context (or the server's default
// max_new_tokens when it has one). temperature 0 is greedy;
// another temperature, or top_p, top_k or min_p, samples; sampling without a seed draws a fresh one. A prompt
// with no room left for one new token is an ApiError 400.
infer::GenerationRequest engine_request(const ApiRequest& request, const ServedModel& model);

}  // namespace zt::serve
