// A thinking model's streamed answer: the think tags found however the pieces split them,
// the reasoning and the answer each after its prefix, dimmed on a terminal, and an answer
// without reasoning left as it is; an answer after a prompt that opened the think block starts
// in it.
#include <gtest/gtest.h>

#include <sstream>

#include "text/reasoning_stream.h"

namespace zt::models {
namespace {

constexpr const char* kQwen3Answer = "<think>\nThe user greets me.\nI greet back.\n</think>\n\nHello! How can I help?";

// The text of each kind, after feeding `text` in pieces of `size` bytes.
std::pair<std::string, std::string> split_in_pieces(const std::string& text, std::size_t size,
                                                    bool in_reasoning = false) {
  ReasoningSplitter splitter(in_reasoning);
  std::string reasoning, answer;
  auto take = [&](const std::vector<StreamPart>& parts) {
    for (const StreamPart& part : parts) (part.reasoning ? reasoning : answer) += part.text;
  };
  for (std::size_t at = 0; at < text.size(); at += size) take(splitter.put(text.substr(at, size)));
  take(splitter.finish());
  return {reasoning, answer};
}

TEST(ReasoningSplitter, FindsTheTagsWhereverThePiecesSplitThem) {
  for (std::size_t size = 1; size <= 12; ++size) {
    const auto [reasoning, answer] = split_in_pieces(kQwen3Answer, size);
    EXPECT_EQ(reasoning, "\nThe user greets me.\nI greet back.\n") << "pieces of " << size;
    EXPECT_EQ(answer, "\n\nHello! How can I help?") << "pieces of " << size;
  }
}

TEST(ReasoningSplitter, TextThatOnlyLooksLikeATagIsText) {
  const auto [reasoning, answer] = split_in_pieces("a <thin> b < c <think", 2);
  EXPECT_EQ(reasoning, "");
  EXPECT_EQ(answer, "a <thin> b < c <think") << "an unfinished tag at the end is text";
  ReasoningSplitter splitter;
  const std::vector<StreamPart> held = splitter.put("x <th");
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].text, "x ") << "what may begin a tag waits for the next piece";
}

std::string printed(const std::string& text, bool styled, bool in_reasoning = false) {
  std::ostringstream out;
  ReasoningPrinter printer(out, styled, in_reasoning);
  for (std::size_t at = 0; at < text.size(); at += 3) printer.put(text.substr(at, 3));
  printer.finish();
  return out.str();
}

TEST(ReasoningPrinter, ReasoningAndAnswerEachAfterTheirPrefix) {
  EXPECT_EQ(printed(kQwen3Answer, false),
            "reasoning: The user greets me.\nI greet back.\nanswer: Hello! How can I help?");
  EXPECT_EQ(printed(kQwen3Answer, true),
            "\x1b[2mreasoning: The user greets me.\nI greet back.\n\x1b[0manswer: Hello! How can I help?");
  // Cut off while thinking: the styling still ends.
  EXPECT_EQ(printed("<think>\nstill thinking", true), "\x1b[2mreasoning: still thinking\x1b[0m");
}

TEST(ReasoningPrinter, AnAnswerWithoutReasoningIsLeftAsItIs) {
  EXPECT_EQ(printed("\n  Hello there.\n", false), "\n  Hello there.\n");
  EXPECT_EQ(printed(" \n", false), " \n");
  EXPECT_EQ(printed("Hello there.", true), "Hello there.");
  // Qwen3 with thinking off writes an empty think block: nothing of it shows.
  EXPECT_EQ(printed("<think>\n\n</think>\n\nHi.", true), "Hi.");
  EXPECT_EQ(printed("\n<think>plan</think>Hi.", false), "reasoning: plan\nanswer: Hi.");
}

// Qwen3's Thinking-2507 models and QwQ: the generation prompt ends "<think>\n", the model writes
// the reasoning and only the closing tag.
constexpr const char* kOpenedAnswer = "The user greets me.\n</think>\n\nHello!";

TEST(ReasoningSplitter, AnAnswerInsideAnOpenedThinkBlockStartsAsReasoning) {
  for (std::size_t size = 1; size <= 12; ++size) {
    const auto [reasoning, answer] = split_in_pieces(kOpenedAnswer, size, /*in_reasoning=*/true);
    EXPECT_EQ(reasoning, "The user greets me.\n") << "pieces of " << size;
    EXPECT_EQ(answer, "\n\nHello!") << "pieces of " << size;
  }
  EXPECT_EQ(printed(kOpenedAnswer, false, true), "reasoning: The user greets me.\nanswer: Hello!");
  EXPECT_EQ(printed("still thinking", true, true), "\x1b[2mreasoning: still thinking\x1b[0m");
  // Without the opened block the same text is all answer, "</think>" included.
  EXPECT_EQ(split_in_pieces(kOpenedAnswer, 4).second, kOpenedAnswer);
}

TEST(ReasoningSplitter, APromptOpensTheThinkBlockWhenItEndsInsideOne) {
  EXPECT_TRUE(prompt_opens_think("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_think("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_think("<|im_start|>assistant\n"));
  EXPECT_TRUE(prompt_opens_think("<think>\na</think>\n\nb<|im_end|>\n<|im_start|>assistant\n<think>\n"));
}

}  // namespace
}  // namespace zt::models
