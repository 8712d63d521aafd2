#include "serve/engine_request.h"

#include <algorithm>
#include <random>

#include "runtime/error.h"
#include "serve/api_error.h"
#include "text/reasoning_stream.h"

namespace zt::serve {
namespace {

// Tool calls are read out of answers in the <tool_call> blocks Qwen's templates teach
// (tool_calls.h); a template that writes calls another way would have its calls sent as text.
void require_tool_call_format(const ApiRequest& request, const ServedModel& model) {
  if (!request.tools.parse_calls || model.chat_template->writes_tool_call_blocks()) return;
  throw invalid_request(
      "'tools': this server reads tool calls in the <tool_call> format of Qwen's chat templates "
      "(vLLM's hermes parser), but it serves the template '" +
          std::string(model.chat_template->name()) +
          "', which writes them another way; send the request without tools, or serve a Qwen "
          "model (--template qwen, qwen2, qwen3)",
      "tools");
}

const models::ChatTemplate& chat_template(const ApiRequest& request, const ServedModel& model) {
  const bool other = request.enable_thinking && *request.enable_thinking != model.enable_thinking;
  return other && model.other_thinking_template ? *model.other_thinking_template : *model.chat_template;
}

std::vector<models::TokenId> chat_prompt(const ApiRequest& request, const ServedModel& model) {
  require_tool_call_format(request, model);
  try {
    return chat_template(request, model)
        .encode(*model.tokenizer, request.messages, /*add_generation_prompt=*/true, request.tools.tools)
        .ids;
  } catch (const Error& error) {  // what the template cannot render is the request's to fix
    throw invalid_request(std::string("the chat template cannot render this conversation: ") + error.what(),
                          "messages");
  }
}

// Token ids the request names (a prompt sent as ids, stop_token_ids) in the field `param`,
// each checked against the vocabulary before it reaches the model.
const std::vector<std::int64_t>& checked_token_ids(const std::vector<std::int64_t>& ids, std::int64_t vocab_size,
                                                   const std::string& param) {
  for (std::int64_t id : ids)
    if (id < 0 || id >= vocab_size)
      throw invalid_request("'" + param + "' holds the token id " + std::to_string(id) +
                                ", outside the vocabulary (0 to " + std::to_string(vocab_size - 1) + ")",
                            param);
  return ids;
}

std::vector<std::int64_t> prompt_tokens(const ApiRequest& request, const ServedModel& model) {
  if (!request.prompt_ids.empty()) return checked_token_ids(request.prompt_ids, model.vocab_size, "prompt");
  std::vector<models::TokenId> ids =
      request.messages.empty() ? model.tokenizer->encode(request.prompt) : chat_prompt(request, model);
  if (ids.empty()) throw invalid_request("the prompt is empty", request.messages.empty() ? "prompt" : "messages");
  return {ids.begin(), ids.end()};
}

models::GenerationOptions sampling_options(const SamplingFields& fields, models::GenerationOptions options) {
  if (fields.temperature) {
    options.do_sample = *fields.temperature > 0;
    if (options.do_sample) options.temperature = *fields.temperature;
  } else if (fields.top_p || fields.top_k || (fields.min_p && *fields.min_p > 0)) {
    options.do_sample = true;
  }
  if (fields.top_p) options.top_p = *fields.top_p;
  if (fields.top_k) options.top_k = *fields.top_k;
  if (fields.min_p) options.min_p = *fields.min_p;
  if (fields.repetition_penalty) options.repetition_penalty = *fields.repetition_penalty;
  if (fields.seed) {
    options.seed = *fields.seed;
  } else if (options.do_sample) {
    static thread_local std::mt19937_64 seeds{std::random_device{}()};
    options.seed = seeds();
  }
  return options;
}

// The prompt's last tokens only, as vLLM's truncate_prompt_tokens keeps them (-1: as many as
// leave room for the completion asked for, one token without max_tokens).
void truncate_prompt(const ApiRequest& request, const ServedModel& model, std::vector<std::int64_t>& prompt) {
  if (!request.truncate_prompt_tokens) return;
  const std::int64_t keep = *request.truncate_prompt_tokens == -1
                                ? model.max_request_tokens - request.sampling.max_tokens.value_or(1)
                                : *request.truncate_prompt_tokens;
  if (keep > 0 && static_cast<std::int64_t>(prompt.size()) > keep) prompt.erase(prompt.begin(), prompt.end() - keep);
}

}  // namespace

std::optional<bool> reasoning_start(const ApiRequest& request, const ServedModel& model) {
  if (request.messages.empty() || model.reasoning_parser == ReasoningParser::kNone) return std::nullopt;
  const models::ChatTemplate& used = chat_template(request, model);
  const bool automatic = model.reasoning_parser == ReasoningParser::kAuto;
  if (automatic && !used.writes_think_blocks()) return std::nullopt;
  const bool in_reasoning =
      models::prompt_opens_think(used.render(request.messages, /*add_generation_prompt=*/true, request.tools.tools));
  // Thinking off (Qwen3's prompt then holds the empty think block): the answer is content,
  // unless the template opened the block anyway (QwQ has no switch).
  if (automatic && !request.enable_thinking.value_or(model.enable_thinking) && !in_reasoning) return std::nullopt;
  return in_reasoning;
}

infer::GenerationRequest engine_request(const ApiRequest& request, const ServedModel& model) {
  std::vector<std::int64_t> prompt = prompt_tokens(request, model);
  truncate_prompt(request, model, prompt);
  const auto length = static_cast<std::int64_t>(prompt.size());
  const std::int64_t room = model.max_request_tokens - length;
  const std::string param = request.messages.empty() ? "prompt" : "messages";
  if (room < 1 || (request.sampling.max_tokens && *request.sampling.max_tokens > room)) {
    const std::int64_t asked = request.sampling.max_tokens.value_or(1);
    throw ApiError(400,
                   "This model's maximum context length is " + std::to_string(model.max_request_tokens) +
                       " tokens. However, you requested " + std::to_string(length + asked) + " tokens (" +
                       std::to_string(length) + " in the " + param + ", " + std::to_string(asked) +
                       " for the completion). Please reduce the length of the " + param + " or the completion.",
                   "invalid_request_error", param, "context_length_exceeded");
  }
  models::GenerationOptions options = sampling_options(request.sampling, model.defaults);
  const std::int64_t default_tokens = model.limits_new_tokens ? std::min(room, model.defaults.max_new_tokens) : room;
  options.max_new_tokens = request.sampling.max_tokens.value_or(default_tokens);
  options.min_new_tokens = std::min(request.sampling.min_tokens, options.max_new_tokens);
  if (request.sampling.ignore_eos) options.eos_token_ids.clear();  // max_tokens or a stop string ends it
  for (std::int64_t id : checked_token_ids(request.sampling.stop_token_ids, model.vocab_size, "stop_token_ids"))
    options.eos_token_ids.push_back(id);
  return {std::move(prompt), options};
}

}  // namespace zt::serve
