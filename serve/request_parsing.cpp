#include "serve/request_parsing.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "serve/api_error.h"
#include "text/chat_template/openai_message.h"

namespace zt::serve {
namespace {

using nlohmann::json;

json parse_object(const std::string& body) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos)
    throw invalid_request(
        "the request body is empty: send a JSON object (the request's fields) with Content-Type: "
        "application/json");
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    throw invalid_request(
        "the request body is not valid JSON: send a JSON object with Content-Type: "
        "application/json");
  if (!parsed.is_object()) throw invalid_request("the request body must be a JSON object");
  return parsed;
}

// The field `name` of `body`, or nullptr when it is absent or null.
const json* field(const json& body, const char* name) {
  const auto found = body.find(name);
  return found == body.end() || found->is_null() ? nullptr : &*found;
}

std::string string_field(const json& value, const std::string& name) {
  if (!value.is_string()) throw invalid_request("'" + name + "' must be a string", name);
  return value.get<std::string>();
}

double number_field(const json& value, const std::string& name, double low, double high) {
  if (!value.is_number()) throw invalid_request("'" + name + "' must be a number", name);
  const double number = value.get<double>();
  if (!std::isfinite(number) || number < low || number > high)
    throw invalid_request(
        "'" + name + "' must be between " + json(low).dump() + " and " + json(high).dump() + ", got " + value.dump(),
        name);
  return number;
}

std::int64_t integer_field(const json& value, const std::string& name) {
  // A whole number written as a float (1024.0, as Python clients that compute it send it) is that
  // integer, as vLLM's fields take it; one too large for 64 bits (which also parses as a float)
  // is said to be out of range rather than not an integer.
  if (value.is_number_float() && std::isfinite(value.get<double>()) &&
      value.get<double>() == std::floor(value.get<double>())) {
    constexpr double kLimit = 9223372036854775808.0;  // 2^63, the first double past int64
    if (!(std::fabs(value.get<double>()) < kLimit))
      throw invalid_request("'" + name + "' must fit in 64 bits, got " + value.dump(), name);
    return static_cast<std::int64_t>(value.get<double>());
  }
  if (!value.is_number_integer()) throw invalid_request("'" + name + "' must be an integer", name);
  return value.get<std::int64_t>();
}

bool bool_field(const json& value, const std::string& name) {
  if (!value.is_boolean()) throw invalid_request("'" + name + "' must be a boolean", name);
  return value.get<bool>();
}

// An empty stop string, alone or listed, is refused as vLLM refuses it: it would end every
// answer before its first character.
std::vector<std::string> stop_field(const json& value) {
  if (!value.is_string() && (!value.is_array() || value.size() > 16))
    throw invalid_request("'stop' must be a string or a list of up to 16 strings", "stop");
  std::vector<std::string> stops;
  if (value.is_string()) stops.push_back(value.get<std::string>());
  for (const json& stop : value.is_array() ? value : json::array()) stops.push_back(string_field(stop, "stop"));
  for (const std::string& stop : stops)
    if (stop.empty()) throw invalid_request("'stop' strings must not be empty", "stop");
  return stops;
}

// OpenAI's fields this server has no mechanism for, with the value that means "not used".
void refuse_unsupported(const json& body, bool chat) {
  // n is read as the other integers are, so 1.0 is the one choice (as vLLM takes it) and a
  // fraction is not an integer; the count itself is checked below.
  if (const json* n = field(body, "n")) integer_field(*n, "n");
  auto refuse_unless = [&](const char* name, const json& neutral) {
    const json* value = field(body, name);
    if (value != nullptr && *value != neutral)
      throw invalid_request("'" + std::string(name) + "' is not supported by this server (only " + neutral.dump() + ")",
                            name);
  };
  refuse_unless("n", 1);
  refuse_unless("best_of", 1);
  if (chat) refuse_unless("logprobs", false);
  // A completion's logprobs is a count of alternatives, where 0 still asks for the chosen token's;
  // "only false" would name no value it takes.
  if (const json* v = field(body, "logprobs"); !chat && v != nullptr && *v != false)
    throw invalid_request(
        "'logprobs' is not supported by this server: it returns no log probabilities; send null (or none)", "logprobs");
  refuse_unless("top_logprobs", 0);
  refuse_unless("echo", false);
  refuse_unless("presence_penalty", 0);
  refuse_unless("frequency_penalty", 0);
  refuse_unless("logit_bias", json::object());
}

// response_format (OpenAI) and vLLM's structured-output fields ask for an answer constrained
// to JSON, a schema, a regex or a choice; this server's sampler follows no grammar, so only
// {"type": "text"} is taken rather than an unconstrained answer passed off as one.
void refuse_constrained_output(const json& body) {
  if (const json* format = field(body, "response_format")) {
    const json* type = format->is_object() ? field(*format, "type") : nullptr;
    if (type == nullptr || !type->is_string())
      throw invalid_request("'response_format' must be an object with a 'type'", "response_format");
    if (*type != "text")
      throw invalid_request("'response_format' of type " + type->dump() +
                                " is not supported by this server: it cannot constrain the answer to JSON; send "
                                "{\"type\": \"text\"} (or none) and ask for the JSON in the messages",
                            "response_format");
  }
  // vLLM's names, then SGLang's for the same (top-level fields of its requests).
  const std::pair<const char*, const char*> constraints[] = {{"guided_json", "vLLM's"},
                                                             {"guided_regex", "vLLM's"},
                                                             {"guided_choice", "vLLM's"},
                                                             {"guided_grammar", "vLLM's"},
                                                             {"structured_outputs", "vLLM's"},
                                                             {"json_schema", "SGLang's"},
                                                             {"regex", "SGLang's"},
                                                             {"ebnf", "SGLang's"}};
  for (const auto& [name, whose] : constraints)
    if (field(body, name) != nullptr)
      throw invalid_request("'" + std::string(name) + "' is not supported by this server: it cannot constrain the " +
                                "answer (" + whose + " structured outputs)",
                            name);
}

// vLLM's and SGLang's fields that change what is generated or returned and that this server
// has no mechanism for: ignored as unknown, they would give an answer other than the one asked
// for with nothing to say so. Their neutral values (what the servers default to) pass.
void refuse_unsupported_extensions(const json& body, bool chat) {
  auto refuse = [](const char* name, const std::string& why) {
    throw invalid_request("'" + std::string(name) + "' is not supported by this server: " + why, name);
  };
  if (const json* v = field(body, "use_beam_search"); v != nullptr && *v != false)
    refuse("use_beam_search", "it samples or decodes greedily, one sequence a request; send false (or none)");
  if (field(body, "prompt_logprobs") != nullptr)
    refuse("prompt_logprobs", "it returns no log probabilities; send null (or none)");
  if (field(body, "stop_regex") != nullptr)
    refuse("stop_regex", "it ends answers at plain strings only; send them as 'stop'");
  if (!chat) return;
  if (const json* v = field(body, "add_generation_prompt"); v != nullptr && *v != true)
    refuse("add_generation_prompt",
           "every chat prompt ends with the template's generation prompt; send true (or none)");
  if (const json* v = field(body, "continue_final_message"); v != nullptr && *v != false)
    refuse("continue_final_message",
           "it answers in a new assistant turn and cannot continue the last message; send false (or none), or "
           "send the rendered text to /v1/completions as the prompt");
  if (field(body, "chat_template") != nullptr)
    refuse("chat_template",
           "it renders with the chat template it was started with (its --template) and reads no template from a "
           "request");
}

// Whether `value` is a non-empty list of token ids (integers; the vocabulary is checked where
// the model is known, serve/engine_request.h).
bool is_token_ids(const json& value) {
  return value.is_array() && !value.empty() &&
         std::all_of(value.begin(), value.end(), [](const json& id) { return id.is_number_integer(); });
}

// vLLM's sampling extensions (its SamplingParams' names and ranges), which clients written for
// it send in the body.
void read_vllm_sampling(const json& body, SamplingFields& s) {
  if (const json* v = field(body, "stop_token_ids")) {
    if (!v->is_array() || (!v->empty() && !is_token_ids(*v)))
      throw invalid_request("'stop_token_ids' must be a list of token ids", "stop_token_ids");
    s.stop_token_ids = v->get<std::vector<std::int64_t>>();
  }
  if (const json* v = field(body, "top_k")) {
    const std::int64_t k = integer_field(*v, "top_k");
    if (k < -1) throw invalid_request("'top_k' must be -1 or 0 (every token) or a positive integer", "top_k");
    s.top_k = std::max<std::int64_t>(k, 0);
  }
  if (const json* v = field(body, "repetition_penalty")) {
    s.repetition_penalty = number_field(*v, "repetition_penalty", 0, 2);
    if (*s.repetition_penalty == 0)
      throw invalid_request("'repetition_penalty' must be greater than 0", "repetition_penalty");
  }
  if (const json* v = field(body, "min_p")) s.min_p = number_field(*v, "min_p", 0, 1);
  if (const json* v = field(body, "include_stop_str_in_output"))
    s.include_stop_str_in_output = bool_field(*v, "include_stop_str_in_output");
  if (const json* v = field(body, "skip_special_tokens")) s.skip_special_tokens = bool_field(*v, "skip_special_tokens");
  // SGLang's name for it
  if (const json* v = field(body, "no_stop_trim")) s.include_stop_str_in_output |= bool_field(*v, "no_stop_trim");
  if (const json* v = field(body, "min_tokens")) s.min_tokens = integer_field(*v, "min_tokens");
  if (s.min_tokens < 0) throw invalid_request("'min_tokens' must be at least 0", "min_tokens");
  if (s.max_tokens && s.min_tokens > *s.max_tokens)
    throw invalid_request("'min_tokens' must not be greater than 'max_tokens'", "min_tokens");
  if (const json* v = field(body, "ignore_eos")) s.ignore_eos = bool_field(*v, "ignore_eos");
}

void read_common(const json& body, ApiRequest& request, bool chat) {
  refuse_unsupported(body, chat);
  refuse_constrained_output(body);
  refuse_unsupported_extensions(body, chat);
  if (const json* v = field(body, "model")) request.model = string_field(*v, "model");
  SamplingFields& s = request.sampling;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {  // the newer name wins
    const json* v = field(body, name);
    if (v == nullptr) continue;
    s.max_tokens = integer_field(*v, name);
    if (*s.max_tokens < 1) throw invalid_request("'" + std::string(name) + "' must be at least 1", name);
  }
  if (const json* v = field(body, "temperature")) s.temperature = number_field(*v, "temperature", 0, 2);
  if (const json* v = field(body, "top_p")) s.top_p = number_field(*v, "top_p", 0, 1);
  if (s.top_p && *s.top_p == 0) throw invalid_request("'top_p' must be greater than 0", "top_p");
  if (const json* v = field(body, "seed")) s.seed = static_cast<std::uint64_t>(integer_field(*v, "seed"));
  if (const json* v = field(body, "stop")) s.stop = stop_field(*v);
  read_vllm_sampling(body, s);
  if (const json* v = field(body, "truncate_prompt_tokens")) {
    const std::int64_t keep = integer_field(*v, "truncate_prompt_tokens");
    if (keep < -1 || keep == 0)
      throw invalid_request(
          "'truncate_prompt_tokens' must be a positive number of tokens, or -1 for as many as the context holds",
          "truncate_prompt_tokens");
    request.truncate_prompt_tokens = keep;
  }
  if (const json* v = field(body, "stream")) request.stream = bool_field(*v, "stream");
  if (const json* v = field(body, "stream_options")) {
    if (!v->is_object()) throw invalid_request("'stream_options' must be an object", "stream_options");
    if (!request.stream)
      throw invalid_request("'stream_options' is only allowed with 'stream': true", "stream_options");
    if (const json* usage = field(*v, "include_usage"))
      request.include_usage = bool_field(*usage, "stream_options.include_usage");
  }
}

// A message's content, read as models::openai_content_text reads it (as `zerotune generate
// --input_file` reads its conversations too). Only an assistant's may be left out or null
// (OpenAI's, for a turn of tool calls); any other role's is required, as OpenAI requires it.
std::string message_content(const json& message, const std::string& role, const std::string& where) {
  const json* content = field(message, "content");
  if (content == nullptr && role != "assistant")
    throw invalid_request("'" + where + ".content' is required for a " + role + " message: a string or a list of parts",
                          where + ".content");
  if (content == nullptr) return "";
  try {
    return models::openai_content_text(*content, "'" + where + ".content'");
  } catch (const Error& error) {  // a content this server cannot read is the request's to fix
    throw invalid_request(error.what(), where + ".content");
  }
}

// An earlier answer's reasoning sent back with it: `reasoning_content`, as this server answers
// it, or `reasoning`, newer vLLM's name. Qwen3's template writes it in the think block of the
// answers after the last query (the turns of a tool-calling loop), so it is kept for the template
// rather than dropped.
std::optional<std::string> answer_reasoning(const json& message, const std::string& where) {
  for (const char* name : {"reasoning_content", "reasoning"})
    if (const json* reasoning = field(message, name)) return string_field(*reasoning, where + "." + name);
  return std::nullopt;
}

std::vector<models::ChatMessage> messages_field(const json& body) {
  const json* messages = field(body, "messages");
  if (messages == nullptr) throw invalid_request("'messages' is required", "messages");
  if (!messages->is_array() || messages->empty())
    throw invalid_request("'messages' must be a non-empty list of messages", "messages");
  std::vector<models::ChatMessage> result;
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) throw invalid_request("'" + where + "' must be an object", where);
    const json* role = field(message, "role");
    if (role == nullptr) throw invalid_request("'" + where + ".role' is required", where + ".role");
    const std::string name = models::openai_role(string_field(*role, where + ".role"));
    if (name != "system" && name != "user" && name != "assistant" && name != "tool")
      throw invalid_request(
          "'" + where + ".role' must be system, developer, user, assistant or tool, got '" + name + "'",
          where + ".role");
    std::vector<models::ToolCall> calls = message_tool_calls(message, where);
    if (!calls.empty() && name != "assistant")
      throw invalid_request("'" + where + ".tool_calls' belongs to assistant messages only", where + ".tool_calls");
    std::optional<std::string> reasoning = name == "assistant" ? answer_reasoning(message, where) : std::nullopt;
    result.push_back({name, message_content(message, name, where), std::move(calls), std::move(reasoning)});
  }
  return result;
}

// A completion's prompt: a string or a list of token ids (which lm-evaluation-harness's
// local-completions sends), each alone or as a list of one; several prompts would need several
// choices, which this server does not give.
void read_prompt(const json& body, ApiRequest& request) {
  const json* prompt = field(body, "prompt");
  if (prompt == nullptr) throw invalid_request("'prompt' is required", "prompt");
  const bool list_of_one = prompt->is_array() && prompt->size() == 1 && !(*prompt)[0].is_number();
  const json& one = list_of_one ? (*prompt)[0] : *prompt;
  if (one.is_string()) {
    request.prompt = one.get<std::string>();
    return;
  }
  if (is_token_ids(one)) {
    request.prompt_ids = one.get<std::vector<std::int64_t>>();
    return;
  }
  throw invalid_request(
      "'prompt' must be a string or a list of token ids (or a list of one of those): this server answers one "
      "prompt a request",
      "prompt");
}

// vLLM's chat_template_kwargs, the keyword arguments its chat template renders with: of those
// zerotune's templates take enable_thinking; another key is refused rather than ignored.
std::optional<bool> enable_thinking_field(const json& body) {
  const json* kwargs = field(body, "chat_template_kwargs");
  if (kwargs == nullptr) return std::nullopt;
  if (!kwargs->is_object()) throw invalid_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
  for (const auto& [key, value] : kwargs->items())
    if (key != "enable_thinking")
      throw invalid_request(
          "'chat_template_kwargs." + key + "' is not taken: this server's chat templates take only enable_thinking",
          "chat_template_kwargs");
  const json* thinking = field(*kwargs, "enable_thinking");
  return thinking ? std::optional<bool>(bool_field(*thinking, "chat_template_kwargs.enable_thinking")) : std::nullopt;
}

}  // namespace

ApiRequest parse_chat_request(const std::string& body) {
  const json parsed = parse_object(body);
  ApiRequest request;
  read_common(parsed, request, /*chat=*/true);
  request.messages = messages_field(parsed);
  request.tools = read_tool_fields(parsed, body);
  request.enable_thinking = enable_thinking_field(parsed);
  return request;
}

ApiRequest parse_completion_request(const std::string& body) {
  const json parsed = parse_object(body);
  ApiRequest request;
  read_common(parsed, request, /*chat=*/false);
  read_prompt(parsed, request);
  if (const json* suffix = field(parsed, "suffix"); suffix != nullptr && *suffix != "")
    throw invalid_request("'suffix' is not supported by this server: it writes on from the end of the prompt only",
                          "suffix");
  return request;
}

}  // namespace zt::serve
