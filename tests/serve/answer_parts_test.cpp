// A chat answer's text as the response carries it (serve/answer_parts.h), on scripted text
// rather than a model's: a <think> block, split over pieces anywhere, comes out as
// reasoning_content and the rest as content, whole and streamed, as vLLM's reasoning parsers
// give them; an answer whose prompt opened the block starts as reasoning; tool calls after the
// reasoning are still read out of the content; without a split the block is content.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "serve/answer_parts.h"

namespace zt::serve {
namespace {

using nlohmann::json;

struct StreamedParts {
  std::string reasoning, content;
  json tool_calls = json::array();
  std::vector<json> chunks;
};

// The chunks of `pieces` streamed, what their deltas add up to, and the whole answer's body.
StreamedParts streamed(const std::vector<std::string>& pieces, std::optional<bool> reasoning_start,
                       bool tools = false) {
  const ResponseFormat format(/*chat=*/true, "tiny", /*include_usage=*/false);
  AnswerParts parts(format, reasoning_start, tools, SIZE_MAX);
  StreamedParts out;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (json& chunk : parts.chunks(pieces[i], i + 1 == pieces.size())) {
      const json& delta = chunk["choices"][0]["delta"];
      EXPECT_FALSE(delta.contains("reasoning_content") && delta.contains("content")) << chunk.dump();
      if (delta.contains("reasoning_content")) out.reasoning += delta["reasoning_content"].get<std::string>();
      if (delta.contains("content")) out.content += delta["content"].get<std::string>();
      if (delta.contains("tool_calls"))
        for (const json& call : delta["tool_calls"]) out.tool_calls.push_back(call);
      out.chunks.push_back(std::move(chunk));
    }
  return out;
}

json whole(const std::string& text, std::optional<bool> reasoning_start, bool tools = false) {
  const ResponseFormat format(/*chat=*/true, "tiny", /*include_usage=*/false);
  AnswerParts parts(format, reasoning_start, tools, SIZE_MAX);
  return parts.whole(text, "stop", {.prompt_tokens = 3, .completion_tokens = 9})["choices"][0];
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string text;
  for (const std::string& piece : pieces) text += piece;
  return text;
}

TEST(AnswerParts, AThinkBlockIsReasoningContentWholeAndStreamed) {
  // Qwen3's way: the block first, its tags split over pieces.
  const std::vector<std::string> pieces = {"<thi", "nk>\nTwo and", " two.</th", "ink>\n\nIt is ", "4."};
  const json choice = whole(joined(pieces), false);
  EXPECT_EQ(choice["message"]["reasoning_content"], "\nTwo and two.");
  EXPECT_EQ(choice["message"]["content"], "\n\nIt is 4.");
  EXPECT_EQ(choice["finish_reason"], "stop");
  const StreamedParts stream = streamed(pieces, false);
  EXPECT_EQ(stream.reasoning, "\nTwo and two.");
  EXPECT_EQ(stream.content, "\n\nIt is 4.");
  // Reasoning first, then content: no content chunk before the last reasoning one.
  std::size_t last_reasoning = 0, first_content = stream.chunks.size();
  for (std::size_t i = 0; i < stream.chunks.size(); ++i) {
    const json& delta = stream.chunks[i]["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) last_reasoning = i;
    if (delta.contains("content") && first_content == stream.chunks.size()) first_content = i;
  }
  EXPECT_LT(last_reasoning, first_content);
}

TEST(AnswerParts, AnAnswerAfterAPromptThatOpenedTheBlockStartsAsReasoning) {
  // qwen3_thinking, QwQ: the prompt ends "<think>\n", the model writes only "...</think>".
  const json choice = whole("Hmm, 4.\n</think>\n\n4", true);
  EXPECT_EQ(choice["message"]["reasoning_content"], "Hmm, 4.\n");
  EXPECT_EQ(choice["message"]["content"], "\n\n4");
  const StreamedParts stream = streamed({"Hmm", ", 4.\n</", "think>\n\n4"}, true);
  EXPECT_EQ(stream.reasoning, "Hmm, 4.\n");
  EXPECT_EQ(stream.content, "\n\n4");
  // Cut while still thinking (max_tokens): all reasoning, content null, as vLLM's.
  const json cut = whole("Hmm, let me", true);
  EXPECT_EQ(cut["message"]["reasoning_content"], "Hmm, let me");
  EXPECT_TRUE(cut["message"]["content"].is_null()) << cut.dump();
}

TEST(AnswerParts, AnAnswerWithoutABlockIsContentWithNullReasoning) {
  const json choice = whole("Just 4.", false);
  EXPECT_TRUE(choice["message"].contains("reasoning_content"));
  EXPECT_TRUE(choice["message"]["reasoning_content"].is_null());
  EXPECT_EQ(choice["message"]["content"], "Just 4.");
  const StreamedParts stream = streamed({"Just", " 4."}, false);
  EXPECT_EQ(stream.reasoning, "");
  EXPECT_EQ(stream.content, "Just 4.");
}

TEST(AnswerParts, WithoutASplitTheBlockStaysInTheContent) {
  const std::string text = "<think>\nplan\n</think>\n\nIt is 4.";
  const json choice = whole(text, std::nullopt);
  EXPECT_FALSE(choice["message"].contains("reasoning_content")) << choice.dump();
  EXPECT_EQ(choice["message"]["content"], text);
  const StreamedParts stream = streamed({"<think>\nplan", "\n</think>\n\nIt is 4."}, std::nullopt);
  EXPECT_EQ(stream.reasoning, "");
  EXPECT_EQ(stream.content, text);
}

TEST(AnswerParts, ToolCallsAfterTheReasoningAreStillRead) {
  const std::vector<std::string> pieces = {
      "<think>\nThe user wants the weather; call get_weather.\n</think>\n\n<tool_",
      "call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"};
  const json choice = whole(joined(pieces), false, /*tools=*/true);
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["reasoning_content"], "\nThe user wants the weather; call get_weather.\n");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << choice.dump();
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Paris\"}");

  const StreamedParts stream = streamed(pieces, false, /*tools=*/true);
  EXPECT_EQ(stream.reasoning, "\nThe user wants the weather; call get_weather.\n");
  EXPECT_EQ(stream.content.find("<tool_call>"), std::string::npos) << stream.content;
  EXPECT_EQ(stream.content.find("think>"), std::string::npos) << stream.content;
  ASSERT_FALSE(stream.tool_calls.empty());
  EXPECT_EQ(stream.tool_calls[0]["function"]["name"], "get_weather");
  std::string arguments;
  for (const json& call : stream.tool_calls) arguments += call["function"].value("arguments", "");
  EXPECT_EQ(json::parse(arguments), json::parse("{\"city\": \"Paris\"}"));
}

}  // namespace
}  // namespace zt::serve
