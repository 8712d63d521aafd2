// OpenAI request bodies read as OpenAI reads them: its fields, null as absent, unknown fields
// ignored, and a bad field an ApiError 400 naming it.
#include <gtest/gtest.h>

#include "serve/api_error.h"
#include "serve/request_parsing.h"

namespace zt::serve {
namespace {

// The param an ApiError names for `body`, or "no error".
std::string refused_param(const std::string& body) {
  try {
    parse_chat_request(body);
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status(), 400);
    return error.body()["error"]["param"].is_null() ? "" : error.body()["error"]["param"].get<std::string>();
  }
  return "no error";
}

TEST(RequestParsing, ReadsOpenAisFields) {
  const ApiRequest chat = parse_chat_request(R"({
    "model": "m", "messages": [{"role": "developer", "content": "be brief"},
                               {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]}],
    "max_tokens": 5, "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "seed": 3,
    "stop": "END", "stream": true, "stream_options": {"include_usage": true},
    "user": "someone", "unknown": {"deep": [1]}, "top_k": null})");
  EXPECT_EQ(chat.model, "m");
  ASSERT_EQ(chat.messages.size(), 2u);
  EXPECT_EQ(chat.messages[0].role, "system");
  EXPECT_EQ(chat.messages[1].content, "hi there");
  EXPECT_EQ(chat.sampling.max_tokens, 7);
  EXPECT_EQ(chat.sampling.temperature, 0.5);
  EXPECT_EQ(chat.sampling.top_p, 0.9);
  EXPECT_EQ(chat.sampling.seed, 3u);
  EXPECT_EQ(chat.sampling.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(chat.stream && chat.include_usage);

  const ApiRequest completion =
      parse_completion_request(R"({"prompt": ["a b"], "stop": ["x", "y"], "temperature": null})");
  EXPECT_EQ(completion.prompt, "a b");
  EXPECT_EQ(completion.sampling.stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(completion.sampling.temperature);
  EXPECT_FALSE(completion.stream);
  EXPECT_EQ(completion.sampling.min_tokens, 0);
  EXPECT_FALSE(completion.sampling.ignore_eos);

  const ApiRequest extended =
      parse_completion_request(R"({"prompt": "a", "max_tokens": 9, "min_tokens": 4, "ignore_eos": true})");
  EXPECT_EQ(extended.sampling.min_tokens, 4);
  EXPECT_TRUE(extended.sampling.ignore_eos);
}

TEST(RequestParsing, BadFieldsAreRefusedByName) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(refused_param("nope"), "");
  EXPECT_EQ(refused_param("{" + messages + ", \"top_p\": 0}"), "top_p");
  EXPECT_EQ(refused_param("{" + messages + ", \"seed\": 1.5}"), "seed");
  EXPECT_EQ(refused_param("{" + messages + ", \"stop\": [\"\"]}"), "stop");
  EXPECT_EQ(refused_param("{" + messages + ", \"stream_options\": {\"include_usage\": true}}"), "stream_options");
  EXPECT_EQ(refused_param("{" + messages + ", \"n\": \"1\"}"), "n");
  EXPECT_EQ(refused_param("{" + messages + ", \"logprobs\": true}"), "logprobs");
  EXPECT_EQ(refused_param("{" + messages + ", \"presence_penalty\": 0.5}"), "presence_penalty");
  EXPECT_EQ(refused_param("{" + messages + ", \"min_tokens\": -1}"), "min_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"max_tokens\": 2, \"min_tokens\": 3}"), "min_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"ignore_eos\": 1}"), "ignore_eos");
  EXPECT_EQ(refused_param(R"({"messages": []})"), "messages");
  EXPECT_EQ(refused_param(R"({"messages": [{"content": "hi"}]})"), "messages[0].role");
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
            "messages[0].content");
  EXPECT_EQ(refused_param("{" + messages + ", \"n\": 1, \"presence_penalty\": 0, \"logprobs\": false}"), "no error");
}

}  // namespace
}  // namespace zt::serve
