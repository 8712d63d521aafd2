// The bodies of POST /v1/chat/completions and /v1/completions read and checked as OpenAI
// does: fields it does not know are ignored, a null field counts as absent, and a field of
// the wrong type or out of range is an ApiError 400 naming it. Fields OpenAI has that this
// server cannot honour (n > 1, logprobs, penalties, a forced tool call, ...) are refused by
// name rather than silently ignored. Tools: serve/tool_request.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serve/tool_request.h"
#include "text/chat_template/chat_template.h"

namespace zt::serve {

struct SamplingFields {
  std::optional<std::int64_t> max_tokens;  // max_completion_tokens, else max_tokens
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::uint64_t> seed;
  std::vector<std::string> stop;
  // vLLM's sampling extensions, over the server's --top_k and --repetition_penalty: top_k 0
  // (vLLM's -1 too) keeps every token.
  std::optional<std::int64_t> top_k;
  std::optional<double> repetition_penalty;
  // vLLM's (and llama.cpp's) min_p, in [0, 1]: tokens less likely than min_p times the most
  // likely one are dropped; 0 keeps every token.
  std::optional<double> min_p;
  // vLLM's stop_token_ids: these end the answer as eos tokens do (ignore_eos or not); as in
  // vLLM, the text of the token that ended it is left out unless include_stop_str_in_output.
  std::vector<std::int64_t> stop_token_ids;
  // vLLM's extensions, which its benchmarks send: no end of sequence before min_tokens new
  // tokens, or (ignore_eos) none at all: only max_tokens or a stop string ends the answer.
  std::int64_t min_tokens = 0;
  bool ignore_eos = false;
  // vLLM's include_stop_str_in_output: the stop string (or the text of the stop token) that
  // ended the answer stays in it.
  bool include_stop_str_in_output = false;
  // vLLM's skip_special_tokens: false keeps the text of special tokens in the answer.
  bool skip_special_tokens = true;
};

struct ApiRequest {
  std::string model;                          // empty when the client named none
  std::vector<models::ChatMessage> messages;  // chat completions
  ToolFields tools;                           // chat completions
  // vLLM's chat_template_kwargs.enable_thinking (chat completions): unset, the server's
  // --enable_thinking.
  std::optional<bool> enable_thinking;
  std::string prompt;  // completions
  // completions: a prompt sent as token ids (OpenAI's other form of it), used as they are.
  std::vector<std::int64_t> prompt_ids;
  // vLLM's truncate_prompt_tokens: only the prompt's last k tokens are read; -1, as many as
  // leave the context room for the completion. Unset: the whole prompt.
  std::optional<std::int64_t> truncate_prompt_tokens;
  SamplingFields sampling;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Throws ApiError (400) for an empty body, malformed JSON or a bad field.
ApiRequest parse_chat_request(const std::string& body);
ApiRequest parse_completion_request(const std::string& body);

}  // namespace zt::serve
