// Templates without thinking in the generation prompt, added beside Qwen2.5's and Qwen3's: Qwen3's
// Instruct-2507 models (`qwen3_instruct`, Qwen3's text without enable_thinking; and
// `qwen3_instruct_plain`, their text without think blocks) and Qwen2.5-Math-Instruct
// (`qwen2.5_math`, Qwen2.5's layout with its own default system prompt). What they render is
// checked against their real texts by family_templates_test; here, what they train.
#include <gtest/gtest.h>

#include "tests/text/chat_template/fake_tokenizer.h"
#include "text/chat_template/chat_template.h"
#include "text/reasoning_stream.h"

namespace zt::models {
namespace {

const std::vector<ChatMessage> kQuestion = {{"user", "Q"}};

void expect_encoded(const EncodedConversation& encoded, const Expected& expected) {
  EXPECT_EQ(encoded.ids, expected.ids);
  EXPECT_EQ(encoded.answer, expected.answer);
}

TEST(InstructTemplates, GenerationPromptsOpenNoThinkBlock) {
  for (const char* name : {"qwen3_instruct", "qwen3_instruct_plain", "qwen2.5_math"}) {
    const auto chat = make_model_chat_template(name);
    EXPECT_EQ(chat->name(), name);
    const std::string prompt = chat->render(kQuestion, true);
    EXPECT_TRUE(prompt.ends_with("<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n")) << name << ": " << prompt;
    EXPECT_FALSE(prompt_opens_think(prompt)) << name;
    EXPECT_EQ(chat->end_of_turn_tokens(), std::vector<std::string>{"<|im_end|>"}) << name;
    EXPECT_TRUE(chat->writes_tool_call_blocks()) << name;
  }
  EXPECT_EQ(make_model_chat_template("qwen2.5_math")->render(kQuestion, true),
            "<|im_start|>system\nPlease reason step by step, and put your final answer within \\boxed{}.<|im_end|>\n"
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n");
}

TEST(InstructTemplates, Qwen3InstructTrainsTheThinkBlockOfTheLastAnswerAsQwen3Does) {
  // Qwen3's text without enable_thinking writes the last answer's (empty) think block, trained.
  const FakeTokenizer tokenizer;
  const std::vector<ChatMessage> messages = {{"user", "Q"}, {"assistant", "A"}};
  const Expected expected = Expected().chatml_turn("user\nQ").chatml_answer("assistant\n", "<think>\n\n</think>\n\nA");
  expect_encoded(make_model_chat_template("qwen3_instruct")->encode(tokenizer, messages, false), expected);
  expect_encoded(make_model_chat_template("qwen3")->encode(tokenizer, messages, false), expected);
}

TEST(InstructTemplates, Qwen3InstructPlainTrainsTheAnswerAsGiven) {
  const FakeTokenizer tokenizer;
  const auto chat = make_model_chat_template("qwen3_instruct_plain");
  expect_encoded(chat->encode(tokenizer, {{"user", "Q"}, {"assistant", "A", {}, "unused reasoning"}}, false),
                 Expected().chatml_turn("user\nQ").chatml_answer("assistant\n", "A"));
  // A think block in the content is the content.
  expect_encoded(chat->encode(tokenizer, {{"user", "Q"}, {"assistant", "<think>r</think>A"}}, false),
                 Expected().chatml_turn("user\nQ").chatml_answer("assistant\n", "<think>r</think>A"));
}

TEST(InstructTemplates, Qwen25MathTrainsTheAnswerAfterItsDefaultSystemTurn) {
  const FakeTokenizer tokenizer;
  expect_encoded(make_model_chat_template("qwen2.5_math")
                     ->encode(tokenizer, {{"user", "1+1?"}, {"assistant", "\\boxed{2}"}}, false),
                 Expected()
                     .chatml_turn("system\nPlease reason step by step, and put your final answer within \\boxed{}.")
                     .chatml_turn("user\n1+1?")
                     .chatml_answer("assistant\n", "\\boxed{2}"));
}

TEST(InstructTemplates, ToolCallsAreTrainedAsQwensOthersAre) {
  const FakeTokenizer tokenizer;
  const std::vector<ChatMessage> messages = {
      {"user", "Q"}, {"assistant", "", {{"f", R"({"x": 1})"}}}, {"tool", "2"}, {"assistant", "A"}};
  const ChatTools tools = {R"({"type": "function", "function": {"name": "f"}})"};
  for (const char* name : {"qwen3_instruct_plain", "qwen2.5_math"}) {
    const EncodedConversation encoded = make_model_chat_template(name)->encode(tokenizer, messages, false, tools);
    std::string trained;
    for (std::size_t i = 0; i < encoded.ids.size(); ++i)
      if (encoded.answer[i] && encoded.ids[i] < 256) trained += static_cast<char>(encoded.ids[i]);
    EXPECT_EQ(trained, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>A") << name;
  }
}

}  // namespace
}  // namespace zt::models
