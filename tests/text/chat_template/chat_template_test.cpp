// The model families' own chat templates: rendered text worked out from each model's own template, and
// the encoding for training (which tokens are answers, tool calls included, tool results not),
// checked with a tokenizer that makes every encode call visible.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/text/chat_template/fake_tokenizer.h"
#include "text/chat_template/chat_template.h"

namespace zt::models {
namespace {

using testing::error_of;

void expect_encoding(std::string_view template_name, const std::vector<ChatMessage>& messages, bool generation_prompt,
                     const Expected& expected) {
  FakeTokenizer tok;
  const EncodedConversation got = make_model_chat_template(template_name)->encode(tok, messages, generation_prompt);
  EXPECT_EQ(got.ids, expected.ids) << template_name;
  EXPECT_EQ(got.answer, expected.answer) << template_name;
  const std::vector<std::int64_t> labels = got.labels();
  for (std::size_t i = 0; i < labels.size(); ++i) EXPECT_EQ(labels[i], got.answer[i] ? got.ids[i] : -100);
}

std::string render(std::string_view name, const std::vector<ChatMessage>& messages, bool generation_prompt) {
  return make_model_chat_template(name)->render(messages, generation_prompt);
}

std::string render_error(std::string_view name, const std::vector<ChatMessage>& messages, bool generation_prompt) {
  return error_of([&] { render(name, messages, generation_prompt); });
}

TEST(ChatTemplate, QwenFamiliesDifferInSystemPromptAndThinkBlock) {
  // Qwen2.5 (`qwen`) and Qwen2 write their default system prompt; neither writes a think block.
  EXPECT_EQ(render("qwen", {{"user", "Hi"}}, true),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render("qwen2.5", {{"user", "Hi"}}, true), render("qwen", {{"user", "Hi"}}, true));
  EXPECT_EQ(render("qwen2", {{"user", "U"}, {"assistant", "A"}}, false),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
            "<|im_start|>assistant\nA<|im_end|>\n");
  EXPECT_EQ(render("qwen", {{"system", "S"}, {"user", "U"}}, false),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n");
  // Qwen3: no default system prompt; the answer after the last question gets a think block.
  EXPECT_EQ(render("qwen3", {{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render("qwen3", {{"system", "S"}, {"user", "U"}, {"assistant", "A"}}, false),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nA<|im_end|>\n");
  EXPECT_EQ(render("qwen3", {{"user", "Q1"}, {"assistant", "<think>r1</think>A1"}, {"user", "Q2"}}, true),
            "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
            "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n");
  // Without thinking the generation prompt closes an empty think block.
  EXPECT_EQ(render("qwen3_nothink", {{"user", "Hi"}}, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  ChatMessage reasoned{"assistant", "So."};
  reasoned.reasoning_content = "\nbecause\n";
  EXPECT_EQ(render("qwen3", {{"user", "Why"}, reasoned}, false),
            "<|im_start|>user\nWhy<|im_end|>\n<|im_start|>assistant\n<think>\nbecause\n</think>\n\nSo.<|im_end|>\n");
}

TEST(ChatTemplate, GlmFamilyRendersTheirLayouts) {
  EXPECT_EQ(render("chatglm3", {{"system", "S"}, {"user", "U"}}, true),
            "[gMASK]sop<|system|>\n S<|user|>\n U<|assistant|>");
  EXPECT_EQ(render("glm4", {{"user", "U"}, {"assistant", "A"}}, false), "[gMASK]<sop><|user|>\nU<|assistant|>\nA");
  EXPECT_EQ(render("glm4", {{"user", "U"}}, true), "[gMASK]<sop><|user|>\nU<|assistant|>");
  EXPECT_EQ(render("chatglm2", {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}}, true),
            "[Round 1]\n\n问：q1\n\n答：a1\n\n[Round 2]\n\n问：q2\n\n答：");
  EXPECT_EQ(render("none", {{"user", "a"}, {"assistant", "b"}}, true), "ab");
}

TEST(ChatTemplate, QwenTrainsTheAnswerAndItsEndToken) {
  expect_encoding("qwen3", {{"user", "U"}, {"assistant", "A"}}, false,
                  Expected().chatml_turn("user\nU").chatml_answer("assistant\n", "<think>\n\n</think>\n\nA"));
  // Without thinking the empty block belongs to the generation prompt, so it is not trained.
  expect_encoding("qwen3_nothink", {{"user", "U"}, {"assistant", "A"}}, false,
                  Expected().chatml_turn("user\nU").chatml_answer("assistant\n<think>\n\n</think>\n\n", "A"));
}

TEST(ChatTemplate, QwenTrainsToolCallsButNotToolResults) {
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"get_weather", R"({"city": "Paris"})"}};
  const std::vector<ChatMessage> messages = {{"user", "U"}, call, {"tool", "17"}, {"assistant", "A"}};
  const std::string call_text =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  expect_encoding("qwen3", messages, false,
                  Expected()
                      .chatml_turn("user\nU")
                      .chatml_answer("assistant\n", call_text)
                      .chatml_turn("user\n<tool_response>\n17\n</tool_response>")
                      .chatml_answer("assistant\n", "<think>\n\n</think>\n\nA"));
}

TEST(ChatTemplate, Chatglm3EncodesEachTextApartAndTrainsWhatFollowsTheAssistantToken) {
  expect_encoding("chatglm3", {{"user", "U"}, {"assistant", "A"}}, false,
                  Expected()
                      .glm_start(1004)
                      .piece("\n")
                      .piece("U")
                      .token(1008)
                      .piece("\n", true)
                      .piece("A", true)
                      .token(1009, true));
}

TEST(ChatTemplate, Glm4TrainsTheNextRoleTokenAfterAnAnswer) {
  expect_encoding("glm4", {{"user", "U"}, {"assistant", "A"}, {"user", "V"}}, true,
                  Expected()
                      .glm_start(1005)
                      .piece("\nU")
                      .token(1008)
                      .piece("\nA", true)
                      .token(1007, true)
                      .piece("\nV")
                      .token(1008));
  expect_encoding("glm4", {{"user", "U"}, {"assistant", "A"}}, false,
                  Expected().glm_start(1005).piece("\nU").token(1008).piece("\nA", true).token(1010, true));
}

TEST(ChatTemplate, GlmToolCallsAreAssistantTurnsNamedByTheTool) {
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"get_weather", R"({"city": "北京"})"}};
  const std::vector<ChatMessage> messages = {{"user", "U"}, call, {"tool", "17"}, {"assistant", "A"}};
  // The model writes the call and ends it with <|observation|>; the result is prompt.
  expect_encoding("glm4", messages, false,
                  Expected()
                      .glm_start(1005)
                      .piece("\nU")
                      .token(1008)
                      .piece("get_weather\n{\"city\": \"北京\"}", true)
                      .token(1011, true)
                      .piece("\n17")
                      .token(1008)
                      .piece("\nA", true)
                      .token(1010, true));
  expect_encoding("chatglm3", {{"user", "U"}, call}, false,
                  Expected()
                      .glm_start(1004)
                      .piece("\n")
                      .piece("U")
                      .token(1008)
                      .piece("get_weather\n", true)
                      .piece("```python\ntool_call(city='北京')\n```", true)
                      .token(1009, true));
}

TEST(ChatTemplate, Chatglm2TrainsTheLastAnswerAndEos) {
  expect_encoding("chatglm2", {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}}, false,
                  Expected()
                      .token(1003)
                      .token(1004)
                      .piece("[Round 1]\n\n问：q1\n\n答：a1\n\n[Round 2]\n\n问：q2\n\n答：")
                      .piece("a2", true)
                      .token(1009, true));
}

TEST(ChatTemplate, RefusalsSayWhatIsAccepted) {
  EXPECT_NE(error_of([] { make_chat_template("llama3"); })
                .find("accepted: qwen, qwen3, qwen3_nothink, glm4, chatglm3, empty (LLaMA-Factory's), qwen2, qwen2.5, "
                      "chatglm2, none (the model family's own template)"),
            std::string::npos);
  testing::expect_mentions(render_error("qwen", {{"function", "x"}}, false),
                           {"message 0 has role 'function'; this template accepts system, user, assistant, tool"});
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"f", "{}"}};
  testing::expect_mentions(render_error("chatglm2", {{"user", "u"}, call}, false),
                           {"chat template 'chatglm2' has no tool format, but this conversation calls tools"});
  EXPECT_NE(error_of([] {
              make_model_chat_template("none")->render({{"user", "u"}}, true, {R"({"type": "function"})"});
            }).find("chat template 'none' has no tool format, but this conversation offers tools"),
            std::string::npos);
  testing::expect_mentions(render_error("qwen", {}, true), {"the conversation is empty"});
  testing::expect_mentions(render_error("chatglm2", {{"system", "s"}, {"user", "u"}}, true), {"role 'system'"});
  testing::expect_mentions(render_error("chatglm2", {{"user", "u"}, {"user", "v"}}, true), {"alternate"});
  FakeTokenizer tok;
  tok.tokens.erase("<|im_start|>");
  EXPECT_NE(error_of([&] {
              make_model_chat_template("qwen")->encode(tok, {{"user", "u"}}, true);
            }).find("chat template 'qwen' needs the token '<|im_start|>'"),
            std::string::npos);
}

}  // namespace
}  // namespace zt::models
