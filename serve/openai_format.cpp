#include "serve/openai_format.h"

#include <chrono>

namespace zt::serve {
namespace {

using nlohmann::json;

std::int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

}  // namespace

ResponseFormat::ResponseFormat(bool chat, std::string model, bool include_usage)
    : chat_(chat),
      model_(std::move(model)),
      id_((chat ? "chatcmpl-" : "cmpl-") + random_hex(24)),
      created_(unix_time()),
      include_usage_(include_usage) {}

json ResponseFormat::choice(const std::string& text, const json& finish_reason, bool delta) const {
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  if (!chat_)
    choice["text"] = text;
  else if (delta)
    choice["delta"] = text.empty() ? json::object() : json{{"content", text}};
  else
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  return choice;
}

json ResponseFormat::completion(json choice, const Usage& usage) const {
  return {{"id", id_},
          {"object", chat_ ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", json::array({std::move(choice)})},
          {"usage", usage_json(usage)}};
}

json ResponseFormat::whole(const std::string& text, const std::string& finish_reason, const Usage& usage) const {
  return completion(choice(text, finish_reason, /*delta=*/false), usage);
}

json ResponseFormat::whole_with_tool_calls(const ExtractedToolCalls& calls, const std::string& finish_reason,
                                           const Usage& usage) const {
  json choice = this->choice("", finish_reason, /*delta=*/false);
  json& message = choice["message"];
  message["content"] = calls.content ? json(*calls.content) : json(nullptr);
  message["tool_calls"] = json::array();
  for (const ToolCallOut& call : calls.calls)
    message["tool_calls"].push_back(
        {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  return completion(std::move(choice), usage);
}

json ResponseFormat::with_reasoning(json body, const std::string& reasoning) const {
  json& message = body["choices"][0]["message"];
  message["reasoning_content"] = reasoning.empty() ? json(nullptr) : json(reasoning);
  if (!reasoning.empty() && message["content"] == "") message["content"] = nullptr;
  return body;
}

json ResponseFormat::chunk(json choice) const {
  json chunk = {{"id", id_},
                {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                {"created", created_},
                {"model", model_},
                {"choices", choice.is_null() ? json::array() : json::array({std::move(choice)})}};
  if (include_usage_) chunk["usage"] = nullptr;  // OpenAI's chunks carry it, null until the last
  return chunk;
}

json ResponseFormat::role_chunk() const {
  json first = choice("", nullptr, /*delta=*/true);
  first["delta"] = {{"role", "assistant"}, {"content", ""}};
  return chunk(std::move(first));
}

json ResponseFormat::text_chunk(const std::string& text) const { return chunk(choice(text, nullptr, true)); }

json ResponseFormat::reasoning_chunk(const std::string& reasoning) const {
  json piece = choice("", nullptr, true);
  piece["delta"] = {{"reasoning_content", reasoning}};
  return chunk(std::move(piece));
}

json ResponseFormat::tool_call_chunk(const ToolCallStream::Delta& delta) const {
  json piece = choice(delta.content, nullptr, true);
  if (!delta.tool_calls.empty()) piece["delta"]["tool_calls"] = delta.tool_calls;
  return chunk(std::move(piece));
}

json ResponseFormat::finish_chunk(const std::string& finish_reason) const {
  return chunk(choice("", finish_reason, true));
}

json ResponseFormat::usage_chunk(const Usage& usage) const {
  json last = chunk(nullptr);
  last["usage"] = usage_json(usage);
  return last;
}

std::string json_text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string server_sent_event(const json& data) { return "data: " + json_text(data) + "\n\n"; }

json model_object(const std::string& model, std::int64_t created) {
  return {{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "zerotune"}};
}

json model_list(const std::string& model, std::int64_t created) {
  return {{"object", "list"}, {"data", json::array({model_object(model, created)})}};
}

}  // namespace zt::serve
