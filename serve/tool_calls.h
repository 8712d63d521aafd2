// Tool calls read out of a model's answer as vLLM's Hermes2ProToolParser reads them (its
// `hermes` parser, the one vLLM's docs name for Qwen2.5 and Qwen3): each
// <tool_call>{"name": ..., "arguments": ...}</tool_call> block is one call, a last block
// without its closing tag runs to the end, and the text before the first block is the
// message's content. Whole answers (extract_tool_calls) and streamed ones (ToolCallStream)
// give the same calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::serve {

// One call as OpenAI's message.tool_calls[i] holds it.
struct ToolCallOut {
  std::string id;         // call_<24 hex digits>
  std::string name;       // function.name
  std::string arguments;  // function.arguments: JSON text
};

struct ExtractedToolCalls {
  bool called = false;                 // false: the answer is content only
  std::optional<std::string> content;  // the text before the first call; nullopt when empty
  std::vector<ToolCallOut> calls;
};

// The whole answer `text`, as Hermes2ProToolParser.extract_tool_calls: a block that is not a
// JSON object with a string "name" and an "arguments" makes the whole answer content, as
// vLLM falls back. The arguments are re-serialised as Python's json.dumps(ensure_ascii=False)
// writes them. `max_calls` keeps the first calls only (parallel_tool_calls false: 1).
ExtractedToolCalls extract_tool_calls(const std::string& text, std::size_t max_calls = SIZE_MAX);

// A streamed answer, as Hermes2ProToolParser.extract_tool_calls_streaming: fed the whole text
// so far after each new piece, it returns what to send now. Content is sent up to the first
// <tool_call> (holding back an end that may begin one); each call's name once it is complete,
// with its id, then its arguments as the model writes them, piece by piece.
class ToolCallStream {
 public:
  explicit ToolCallStream(std::size_t max_calls = SIZE_MAX) : max_calls_(max_calls) {}

  struct Delta {
    std::string content;                                  // empty: none
    nlohmann::json tool_calls = nlohmann::json::array();  // OpenAI's delta.tool_calls entries
    bool empty() const { return content.empty() && tool_calls.empty(); }
  };
  // `finished`: the answer is complete, so text held back because it might have begun a
  // <tool_call> is content after all.
  Delta next(const std::string& text, bool finished);
  // Whether a call has been sent (finish_reason "tool_calls").
  bool called() const { return !calls_.empty(); }

 private:
  struct Streamed {
    std::string name;
    std::string arguments;  // sent so far
  };
  std::string take_content(const std::string& text, bool finished);

  std::size_t max_calls_;
  std::size_t content_sent_ = 0;
  std::vector<Streamed> calls_;
};

// `digits` random lowercase hex digits, different in every process (ids of answers and calls).
std::string random_hex(std::size_t digits);

}  // namespace zt::serve
