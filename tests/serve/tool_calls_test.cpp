// Tool calls read out of answers as vLLM's hermes parser (Hermes2ProToolParser) reads them,
// whole and streamed, and the OpenAI shapes they are sent in: message.tool_calls with
// finish_reason tool_calls, delta.tool_calls by index, ids unique per call and per answer.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "serve/openai_format.h"
#include "serve/tool_calls.h"

namespace zt::serve {
namespace {

using nlohmann::json;

// Qwen2.5's way of writing a call: the block on its own lines, the JSON as json.dumps writes it.
const std::string kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"°C\"}}\n</tool_call>";
const std::string kTwoCalls =
    "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
    "<tool_call>\n{\"arguments\":{\"b\":1,\"a\":[2.5,true,null,\"x}\"]},\"name\":\"lookup\"}";  // unclosed: to the end

TEST(ExtractToolCalls, TextWithoutABlockIsContent) {
  const ExtractedToolCalls none = extract_tool_calls("The weather is fine.");
  EXPECT_FALSE(none.called);
  EXPECT_EQ(none.content, "The weather is fine.");
  EXPECT_TRUE(none.calls.empty());
}

TEST(ExtractToolCalls, EachBlockIsACallAndTheTextBeforeTheContent) {
  const ExtractedToolCalls one = extract_tool_calls(kWeather);
  ASSERT_TRUE(one.called);
  EXPECT_EQ(one.content, std::nullopt) << "no text before the call: content null, as vLLM";
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].name, "get_weather");
  EXPECT_EQ(one.calls[0].arguments, "{\"city\": \"Paris\", \"unit\": \"°C\"}");  // json.dumps, ensure_ascii=False
  EXPECT_TRUE(std::regex_match(one.calls[0].id, std::regex("call_[0-9a-f]{24}"))) << one.calls[0].id;

  const ExtractedToolCalls two = extract_tool_calls(kTwoCalls);
  ASSERT_TRUE(two.called);
  EXPECT_EQ(two.content, "Let me check both.\n");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[1].name, "lookup");
  // Re-serialised as Python writes it, keys in the model's order.
  EXPECT_EQ(two.calls[1].arguments, "{\"b\": 1, \"a\": [2.5, true, null, \"x}\"]}");
  EXPECT_NE(two.calls[0].id, two.calls[1].id);
  // parallel_tool_calls false: the first call only.
  EXPECT_EQ(extract_tool_calls(kTwoCalls, 1).calls.size(), 1u);
}

TEST(ExtractToolCalls, ABlockThatIsNotACallMakesItAllContent) {
  for (const std::string& text : std::vector<std::string>{
           "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call>",
           "<tool_call>[1, 2]</tool_call>", "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>",
           kWeather + "\n<tool_call>not json</tool_call>"}) {
    const ExtractedToolCalls result = extract_tool_calls(text);
    EXPECT_FALSE(result.called) << text;
    EXPECT_EQ(result.content, text);
  }
}

// What a client assembles from the stream: the content, and each call by index.
struct Assembled {
  std::string content;
  std::vector<json> calls;  // {"id", "name", "arguments"}
  int name_deltas = 0;
};

Assembled stream_in_pieces(const std::string& text, std::size_t piece, std::size_t max_calls = SIZE_MAX) {
  ToolCallStream stream(max_calls);
  Assembled out;
  std::string so_far;
  for (std::size_t at = 0; at < text.size(); at += piece) {
    so_far += text.substr(at, piece);
    const ToolCallStream::Delta delta = stream.next(so_far, so_far.size() == text.size());
    out.content += delta.content;
    for (const json& entry : delta.tool_calls) {
      const std::size_t index = entry["index"];
      if (entry.contains("id")) {
        EXPECT_EQ(index, out.calls.size()) << "a call starts after the one before it";
        EXPECT_EQ(entry["type"], "function");
        out.calls.push_back({{"id", entry["id"]}, {"name", entry["function"]["name"]}, {"arguments", ""}});
        ++out.name_deltas;
      }
      EXPECT_LT(index, out.calls.size()) << "arguments before the call's name";
      if (index < out.calls.size())
        out.calls[index]["arguments"] =
            out.calls[index]["arguments"].get<std::string>() + entry["function"].value("arguments", "");
    }
  }
  EXPECT_EQ(stream.called(), !out.calls.empty());
  return out;
}

TEST(ToolCallStream, StreamedCallsAreTheWholeAnswersCalls) {
  for (std::size_t piece : {1u, 3u, 7u, 1000u}) {
    const Assembled one = stream_in_pieces(kWeather, piece);
    EXPECT_EQ(one.content, "") << "piece " << piece;
    ASSERT_EQ(one.calls.size(), 1u) << "piece " << piece;
    EXPECT_EQ(one.calls[0]["name"], "get_weather");
    EXPECT_EQ(one.calls[0]["arguments"], "{\"city\": \"Paris\", \"unit\": \"°C\"}");
    EXPECT_TRUE(std::regex_match(one.calls[0]["id"].get<std::string>(), std::regex("call_[0-9a-f]{24}")));

    const Assembled two = stream_in_pieces(kTwoCalls, piece);
    EXPECT_EQ(two.content, "Let me check both.\n") << "piece " << piece;
    ASSERT_EQ(two.calls.size(), 2u) << "piece " << piece;
    EXPECT_EQ(two.name_deltas, 2);
    EXPECT_EQ(two.calls[1]["name"], "lookup");
    // Streamed arguments are the model's own text (vLLM streams them unparsed).
    EXPECT_EQ(two.calls[1]["arguments"], "{\"b\":1,\"a\":[2.5,true,null,\"x}\"]}") << "piece " << piece;
    EXPECT_EQ(stream_in_pieces(kTwoCalls, piece, 1).calls.size(), 1u);
  }
}

TEST(ToolCallStream, ContentIsHeldBackOnlyWhileItMayBeginATag) {
  ToolCallStream stream;
  EXPECT_EQ(stream.next("Sure <tool", false).content, "Sure ");
  EXPECT_EQ(stream.next("Sure <tools are", false).content, "<tools are");
  EXPECT_EQ(stream.next("Sure <tools are <", false).content, " ");
  // The answer ended: what was held back was text after all.
  EXPECT_EQ(stream.next("Sure <tools are <", true).content, "<");
  EXPECT_FALSE(stream.called());
  // Text after the calls is not sent, as vLLM does not.
  const Assembled after = stream_in_pieces(kWeather + "\nDone.", 5);
  EXPECT_EQ(after.content, "");
  EXPECT_EQ(after.calls.size(), 1u);
}

TEST(ResponseFormat, ToolCallsInOpenAisShape) {
  const ResponseFormat format(/*chat=*/true, "m", /*include_usage=*/false);
  const json whole = format.whole_with_tool_calls(extract_tool_calls(kTwoCalls), "tool_calls", Usage{5, 9});
  const json& choice = whole["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Let me check both.\n");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 2u);
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_TRUE(call["function"]["arguments"].is_string());
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(
      format.whole_with_tool_calls(extract_tool_calls(kWeather), "tool_calls", {})["choices"][0]["message"]["content"],
      nullptr);

  ToolCallStream stream;
  const json chunk = format.tool_call_chunk(stream.next(kWeather, true));
  const json& delta = chunk["choices"][0]["delta"];
  EXPECT_FALSE(delta.contains("content"));
  ASSERT_EQ(delta["tool_calls"].size(), 1u);
  EXPECT_EQ(delta["tool_calls"][0]["index"], 0);
  EXPECT_EQ(delta["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
}

TEST(ResponseFormat, IdsAreRandomNotCounted) {
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    const std::string id = ResponseFormat(true, "m", false).id();
    EXPECT_TRUE(std::regex_match(id, std::regex("chatcmpl-[0-9a-f]{24}"))) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_TRUE(std::regex_match(ResponseFormat(false, "m", false).id(), std::regex("cmpl-[0-9a-f]{24}")));
}

}  // namespace
}  // namespace zt::serve
