// A chat or completion answer's text as the response carries it, whole or streamed: for chat,
// its reasoning split off as reasoning_content when the request asks for that
// (engine_request.h's reasoning_start; text/reasoning_stream.h's splitter), and tool calls
// read out of the content after it (tool_calls.h), as vLLM's reasoning parser hands the
// content to its tool parser. The route feeds it the text as the engine writes it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/openai_format.h"
#include "serve/tool_calls.h"
#include "text/reasoning_stream.h"

namespace zt::serve {

class AnswerParts {
 public:
  // `reasoning_start`: nullopt, no split; else whether the text starts inside a think block.
  // `parse_tool_calls`: read calls (at most `max_tool_calls`) out of the content.
  AnswerParts(const ResponseFormat& format, std::optional<bool> reasoning_start, bool parse_tool_calls,
              std::size_t max_tool_calls);

  // Streaming: the chunks to send for the next piece of the text, in order (reasoning first
  // where a piece holds both); `finished`: the piece is the last, and what was held back goes.
  std::vector<nlohmann::json> chunks(const std::string& piece, bool finished);
  // The whole answer's body for its whole text; `finish_reason` unless it calls tools.
  nlohmann::json whole(const std::string& text, const std::string& finish_reason, const Usage& usage);
  // Whether the answer called a tool (finish_reason "tool_calls").
  bool called() const { return called_ || tool_stream_.called(); }

 private:
  std::vector<models::StreamPart> split(const std::string& piece, bool finished);

  const ResponseFormat& format_;
  std::optional<models::ReasoningSplitter> reasoning_;
  bool parse_tool_calls_;
  std::size_t max_tool_calls_;
  ToolCallStream tool_stream_;
  std::string content_so_far_;  // streaming with tools: what the tool-call stream reads
  bool called_ = false;         // whole: calls were read
};

}  // namespace zt::serve
