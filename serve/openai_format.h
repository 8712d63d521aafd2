// The OpenAI API's response bodies for one request: a whole chat.completion or
// text_completion, or, when streaming, its chunks (chat.completion.chunk: a first one with the
// role, one per piece of text or of tool calls, a last one with finish_reason, and with
// include_usage one more with the usage and no choices), each sent as a server-sent event.
// An answer whose reasoning is split off (vLLM's reasoning parsers) carries it as
// message.reasoning_content, streamed as delta.reasoning_content.
// Ids are chatcmpl-/cmpl- and 24 random hex digits, so that they differ across processes.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/tool_calls.h"

namespace zt::serve {

struct Usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
};

class ResponseFormat {
 public:
  // `chat`: /v1/chat/completions' shapes, else /v1/completions'.
  ResponseFormat(bool chat, std::string model, bool include_usage);

  const std::string& id() const { return id_; }
  bool include_usage() const { return include_usage_; }
  nlohmann::json whole(const std::string& text, const std::string& finish_reason, const Usage& usage) const;
  // Chat only: an answer that calls tools, its message's content (null when nullopt) beside
  // message.tool_calls.
  nlohmann::json whole_with_tool_calls(const ExtractedToolCalls& calls, const std::string& finish_reason,
                                       const Usage& usage) const;
  // Chat only: a whole answer's `body` (whole, whole_with_tool_calls) with its reasoning as
  // message.reasoning_content (null when empty); its content then null when empty, as vLLM's.
  nlohmann::json with_reasoning(nlohmann::json body, const std::string& reasoning) const;
  // Chat only: the role, before any text.
  nlohmann::json role_chunk() const;
  nlohmann::json text_chunk(const std::string& text) const;
  // Chat only: delta.reasoning_content.
  nlohmann::json reasoning_chunk(const std::string& reasoning) const;
  // Chat only: delta.content (when not empty) and delta.tool_calls.
  nlohmann::json tool_call_chunk(const ToolCallStream::Delta& delta) const;
  nlohmann::json finish_chunk(const std::string& finish_reason) const;
  nlohmann::json usage_chunk(const Usage& usage) const;

 private:
  nlohmann::json chunk(nlohmann::json choice) const;
  nlohmann::json choice(const std::string& text, const nlohmann::json& finish_reason, bool delta) const;
  nlohmann::json completion(nlohmann::json choice, const Usage& usage) const;

  bool chat_;
  std::string model_;
  std::string id_;
  std::int64_t created_;
  bool include_usage_;
};

// `json` as text, ill-formed UTF-8 (a model may emit it) replaced by U+FFFD rather than thrown.
std::string json_text(const nlohmann::json& value);

// `data: <json>\n\n`, and the stream's end.
std::string server_sent_event(const nlohmann::json& data);
inline constexpr const char* kServerSentDone = "data: [DONE]\n\n";

// GET /v1/models/{model}: the model served; GET /v1/models: the list of it alone.
nlohmann::json model_object(const std::string& model, std::int64_t created);
nlohmann::json model_list(const std::string& model, std::int64_t created);

}  // namespace zt::serve
