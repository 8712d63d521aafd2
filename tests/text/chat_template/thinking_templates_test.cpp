// The thinking-only Qwen templates, whose generation prompt opens the think block: Qwen3's
// Thinking-2507 models (`qwen3_thinking`) and QwQ-32B (`qwq`). Each renders what its own Jinja
// text renders through transformers' apply_chat_template (the expected texts below were
// rendered so), and is recognised from the features of that text.
#include <gtest/gtest.h>

#include "text/chat_template/chat_template.h"

namespace zt::models {
namespace {

ChatMessage answered(std::string content, std::optional<std::string> reasoning = std::nullopt) {
  return {"assistant", std::move(content), {}, std::move(reasoning)};
}

// System, a question, an answer with its reasoning, a second question.
std::vector<ChatMessage> second_question(ChatMessage answer) {
  return {{"system", "Be brief."}, {"user", "What is 2+2?"}, std::move(answer), {"user", "And 3+3?"}};
}

// Both drop the earlier answer's reasoning, given apart or in the content, and invent no
// system prompt.
constexpr const char* kSecondPrompt =
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
    "<|im_start|>assistant\n4.<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n<think>\n";

TEST(ThinkingTemplates, GenerationPromptOpensTheThinkBlock) {
  for (const char* name : {"qwen3_thinking", "qwq"}) {
    const auto chat = make_model_chat_template(name);
    EXPECT_EQ(chat->name(), name);
    EXPECT_EQ(chat->render(second_question(answered("4.", "2 plus 2 is 4.")), true), kSecondPrompt) << name;
    EXPECT_EQ(chat->render(second_question(answered("<think>\n2 plus 2 is 4.\n</think>\n\n4.")), true), kSecondPrompt)
        << name;
    EXPECT_EQ(chat->render({{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n")
        << name << ": no default system prompt";
  }
}

TEST(ThinkingTemplates, TheLastAnswersReasoning) {
  const std::vector<ChatMessage> messages = {{"user", "What is 2+2?"}, answered("4.", "2 plus 2 is 4.")};
  // Qwen3's Thinking-2507 keeps the reasoning after the last question, as Qwen3 does.
  EXPECT_EQ(make_model_chat_template("qwen3_thinking")->render(messages, false),
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n2 plus 2 is 4.\n</think>\n\n"
            "4.<|im_end|>\n");
  // QwQ's template writes no reasoning at all.
  EXPECT_EQ(make_model_chat_template("qwq")->render(messages, false),
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4.<|im_end|>\n");
}

TEST(ThinkingTemplates, TheOpenedThinkTagIsPromptInTraining) {
  const auto chat = make_model_chat_template("qwen3_thinking");
  std::string trained, prompt_tail;
  for (const ChatPart& part : chat->parts({{"user", "Q"}, answered("A", "r")}, false, {})) {
    if (part.answer)
      trained += part.text;
    else if (trained.empty())
      prompt_tail = part.text;
  }
  EXPECT_EQ(prompt_tail, "<think>\n") << "the generation prompt supplies it";
  EXPECT_EQ(trained, "r\n</think>\n\nA<|im_end|>");
}

TEST(ThinkingTemplates, RecognisedFromTheirTemplateTexts) {
  // Features of Qwen3-4B-Thinking-2507's and QwQ-32B's chat_template (Jinja source, "\n" escaped).
  const std::string opener = R"({{- '<|im_start|>assistant\n<think>\n' }})";
  EXPECT_EQ(recognise_chat_template("<|im_start|>{%- if message.reasoning_content is string %}"
                                    "{%- set ns.last_query_index = index %}<think>" +
                                    opener),
            "qwen3_thinking");
  EXPECT_EQ(recognise_chat_template("<|im_start|>{%- set content = message.content.split('</think>')[-1] %}" + opener),
            "qwq");
  // The hybrid Qwen3 template names enable_thinking; an opener alone says nothing.
  EXPECT_EQ(recognise_chat_template("<|im_start|>{%- if enable_thinking %}<think>"), "qwen3");
  EXPECT_EQ(recognise_chat_template("<|im_start|>" + opener), std::nullopt);
}

}  // namespace
}  // namespace zt::models
