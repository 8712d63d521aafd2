// The thinking-only templates, whose generation prompt opens the think block: Qwen3's
// Thinking-2507 models (`qwen3_thinking`), QwQ-32B (`qwq`) and DeepSeek-R1-Distill
// (`deepseek_r1_distill`; its first revision, `deepseek_r1_distill_initial`, left the tag to the
// model). Each renders what its own Jinja text renders through transformers'
// apply_chat_template (the expected texts below were rendered so; DeepSeek's conversations of
// tests/data/chat_templates/ too), and is recognised from the features of that text.
#include <gtest/gtest.h>

#include "tests/text/chat_template/fake_tokenizer.h"
#include "text/chat_template/chat_template.h"
#include "text/reasoning_stream.h"

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

// DeepSeek's tokens in the fake tokenizer: bos 1100, <｜User｜> 1101, <｜Assistant｜> 1102,
// <｜end▁of▁sentence｜> 1103.
FakeTokenizer deepseek_tokenizer() {
  FakeTokenizer tokenizer;
  tokenizer.tokens.insert({{"<｜begin▁of▁sentence｜>", 1100},
                           {"<｜User｜>", 1101},
                           {"<｜Assistant｜>", 1102},
                           {"<｜end▁of▁sentence｜>", 1103}});
  return tokenizer;
}

TEST(ThinkingTemplates, DeepSeekR1DistillRendersItsOwnLayout) {
  const auto chat = make_model_chat_template("deepseek_r1_distill");
  EXPECT_EQ(chat->name(), "deepseek_r1_distill");
  // The reasoning of an earlier answer is cut at its last </think>, nothing stripped; the last
  // system message stands after the bos wherever it was given.
  const std::vector<ChatMessage> messages = {{"system", "Be brief."},
                                             {"user", "What is 2+2?"},
                                             answered("<think>\n2 plus 2 is 4.\n</think>\n\n4.", "unused"),
                                             {"system", "Be briefer."},
                                             {"user", "And 3+3?"}};
  EXPECT_EQ(chat->render(messages, true),
            "<｜begin▁of▁sentence｜>Be briefer.<｜User｜>What is 2+2?<｜Assistant｜>\n\n4.<｜end▁of▁sentence｜>"
            "<｜User｜>And 3+3?<｜Assistant｜><think>\n");
  EXPECT_EQ(make_model_chat_template("deepseek_r1_distill_initial")->render(messages, true),
            "<｜begin▁of▁sentence｜>Be briefer.<｜User｜>What is 2+2?<｜Assistant｜>\n\n4.<｜end▁of▁sentence｜>"
            "<｜User｜>And 3+3?<｜Assistant｜>");
  EXPECT_EQ(chat->end_of_turn_tokens(), std::vector<std::string>{"<｜end▁of▁sentence｜>"});
  EXPECT_FALSE(chat->writes_tool_call_blocks());
}

TEST(ThinkingTemplates, DeepSeekR1DistillAnswersStartAsReasoningInChat) {
  // What chat and serve ask of the prompt: whether the answer starts inside the think block.
  const std::vector<ChatMessage> question = {{"user", "Hi"}};
  EXPECT_TRUE(prompt_opens_think(make_model_chat_template("deepseek_r1_distill")->render(question, true)));
  EXPECT_FALSE(prompt_opens_think(make_model_chat_template("deepseek_r1_distill_initial")->render(question, true)));
  EXPECT_TRUE(prompt_opens_think(make_model_chat_template("qwen3_thinking")->render(question, true)));
}

TEST(ThinkingTemplates, DeepSeekR1DistillTrainsTheAnswerAndItsEndToken) {
  const FakeTokenizer tokenizer = deepseek_tokenizer();
  const auto chat = make_model_chat_template("deepseek_r1_distill");
  const EncodedConversation encoded =
      chat->encode(tokenizer, {{"system", "S"}, {"user", "Q"}, answered("<think>r</think>A")}, false);
  const Expected expected =
      Expected().token(1100).piece("S").token(1101).piece("Q").token(1102).piece("A", true).token(1103, true);
  EXPECT_EQ(encoded.ids, expected.ids);
  EXPECT_EQ(encoded.answer, expected.answer);
  // The generation prompt, "<think>\n" included, is prompt.
  const EncodedConversation prompt = chat->encode(tokenizer, {{"user", "Q"}}, true);
  const Expected prompt_expected = Expected().token(1100).token(1101).piece("Q").token(1102).piece("<think>\n");
  EXPECT_EQ(prompt.ids, prompt_expected.ids);
  EXPECT_EQ(prompt.answer, prompt_expected.answer);
}

TEST(ThinkingTemplates, DeepSeekR1DistillHasNoToolFormat) {
  const auto chat = make_model_chat_template("deepseek_r1_distill");
  EXPECT_THROW(chat->render({{"user", "Q"}}, true, {R"({"type": "function", "function": {"name": "f"}})"}),
               std::exception);
  EXPECT_THROW(chat->render({{"user", "Q"}, {"tool", "42"}}, true), std::exception);
}

TEST(ThinkingTemplates, DeepSeekR1DistillRecognisedFromItsTemplateTexts) {
  const std::string body =
      "{% set ns = namespace(system_prompt='') %}{% set ns.system_prompt = message['content'] %}"
      "{{'<｜User｜>' + message['content']}}{% set content = content.split('</think>')[-1] %}";
  EXPECT_EQ(recognise_chat_template(body + "{{'<｜Assistant｜><think>\\n'}}"), "deepseek_r1_distill");
  EXPECT_EQ(recognise_chat_template(body + "{{'<｜Assistant｜>'}}"), "deepseek_r1_distill_initial");
}

// What serve asks before splitting an answer's reasoning off: whether the template's models
// write a think block at all.
TEST(ThinkingTemplates, TheTemplatesWhoseModelsThinkSaySo) {
  for (const char* name : {"qwen3", "qwen3_thinking", "qwq", "deepseek_r1_distill", "deepseek_r1_distill_initial"})
    EXPECT_TRUE(make_model_chat_template(name)->writes_think_blocks()) << name;
  for (const char* name : {"qwen3_instruct", "qwen3_instruct_plain", "qwen2.5", "qwen2.5_math", "glm4"})
    EXPECT_FALSE(make_model_chat_template(name)->writes_think_blocks()) << name;
  EXPECT_FALSE(make_qwen3_chat_template(Qwen3Thinking::kOff)->writes_think_blocks());
  EXPECT_TRUE(make_llama_factory_template("qwen3", {})->writes_think_blocks());  // a ReasoningTemplate
  EXPECT_FALSE(make_llama_factory_template("qwen", {})->writes_think_blocks());
}

}  // namespace
}  // namespace zt::models
