#include "serve/answer_parts.h"

namespace zt::serve {

AnswerParts::AnswerParts(const ResponseFormat& format, std::optional<bool> reasoning_start, bool parse_tool_calls,
                         std::size_t max_tool_calls)
    : format_(format),
      parse_tool_calls_(parse_tool_calls),
      max_tool_calls_(max_tool_calls),
      tool_stream_(max_tool_calls) {
  if (reasoning_start) reasoning_.emplace(*reasoning_start);
}

std::vector<models::StreamPart> AnswerParts::split(const std::string& piece, bool finished) {
  if (!reasoning_)
    return piece.empty() ? std::vector<models::StreamPart>{} : std::vector<models::StreamPart>{{false, piece}};
  std::vector<models::StreamPart> parts = reasoning_->put(piece);
  if (finished)
    for (models::StreamPart& part : reasoning_->finish()) parts.push_back(std::move(part));
  return parts;
}

std::vector<nlohmann::json> AnswerParts::chunks(const std::string& piece, bool finished) {
  std::vector<nlohmann::json> out;
  std::string content;  // with tools: this piece's content, after its reasoning
  for (const models::StreamPart& part : split(piece, finished)) {
    if (part.reasoning)
      out.push_back(format_.reasoning_chunk(part.text));
    else if (parse_tool_calls_)
      content += part.text;
    else
      out.push_back(format_.text_chunk(part.text));
  }
  if (parse_tool_calls_) {
    content_so_far_ += content;
    const ToolCallStream::Delta delta = tool_stream_.next(content_so_far_, finished);
    if (!delta.empty()) out.push_back(format_.tool_call_chunk(delta));
  }
  return out;
}

nlohmann::json AnswerParts::whole(const std::string& text, const std::string& finish_reason, const Usage& usage) {
  std::string reasoning, content;
  for (const models::StreamPart& part : split(text, /*finished=*/true))
    (part.reasoning ? reasoning : content) += part.text;
  const ExtractedToolCalls calls =
      parse_tool_calls_ ? extract_tool_calls(content, max_tool_calls_) : ExtractedToolCalls{};
  called_ = calls.called;
  nlohmann::json body = calls.called ? format_.whole_with_tool_calls(calls, "tool_calls", usage)
                                     : format_.whole(content, finish_reason, usage);
  return reasoning_ ? format_.with_reasoning(std::move(body), reasoning) : body;
}

}  // namespace zt::serve
