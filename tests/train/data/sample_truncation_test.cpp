// The truncation rule on its own: the prompt is owed a quarter of max_length, the reply keeps
// the rest (whole when it fits), the prompt keeps its head and the tokens that open the reply.
#include <gtest/gtest.h>

#include <numeric>

#include "runtime/error.h"
#include "train/data/sample_truncation.h"

namespace zt::train {
namespace {

// Prompt ids 0, 1, ... (unlabelled) followed by reply ids 1000, 1001, ... (labelled).
TokenizedSample conversation(int prompt, int reply) {
  TokenizedSample sample;
  for (int i = 0; i < prompt; ++i) sample.ids.push_back(i), sample.labels.push_back(kIgnoreIndex);
  for (int i = 0; i < reply; ++i) sample.ids.push_back(1000 + i), sample.labels.push_back(1000 + i);
  return sample;
}

std::vector<std::int32_t> range(int begin, int end) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(end - begin));
  std::iota(ids.begin(), ids.end(), begin);
  return ids;
}

std::vector<std::int32_t> joined(std::vector<std::vector<std::int32_t>> parts) {
  std::vector<std::int32_t> out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

TEST(SampleTruncation, ALongPromptLosesItsMiddleAndTheShortReplyStaysWhole) {
  const TokenizedSample cut = truncate_keeping_reply(conversation(30, 5), {.begin = 30, .header = 3}, 16);
  EXPECT_EQ(cut.ids, joined({range(0, 8), range(27, 30), range(1000, 1005)}));
  EXPECT_EQ(std::vector<std::int32_t>(cut.labels.begin() + 11, cut.labels.end()), range(1000, 1005));
  EXPECT_EQ(cut.labels[10], kIgnoreIndex);
}

TEST(SampleTruncation, AReplyOverThreeQuartersLosesItsTail) {
  // Prompt over its quarter: cut to 4 (2 of head, 2 of header); the reply keeps 12.
  TokenizedSample cut = truncate_keeping_reply(conversation(10, 30), {.begin = 10, .header = 2}, 16);
  EXPECT_EQ(cut.ids, joined({range(0, 2), range(8, 10), range(1000, 1012)}));
  // Prompt under its quarter: whole; the reply fills the rest.
  cut = truncate_keeping_reply(conversation(3, 30), {.begin = 3, .header = 2}, 16);
  EXPECT_EQ(cut.ids, joined({range(0, 3), range(1000, 1013)}));
}

TEST(SampleTruncation, TheHeaderTakesAtMostHalfOfTheKeptPrompt) {
  const TokenizedSample cut = truncate_keeping_reply(conversation(30, 5), {.begin = 30, .header = 20}, 16);
  EXPECT_EQ(cut.ids, joined({range(0, 6), range(25, 30), range(1000, 1005)}));
}

TEST(SampleTruncation, SamplesThatFitAreUntouchedAndTextLosesItsTail) {
  const TokenizedSample sample = conversation(6, 4);
  EXPECT_EQ(truncate_keeping_reply(sample, {.begin = 6, .header = 2}, 10).ids, sample.ids);
  const TokenizedSample cut = truncate_tail(sample, 7);
  EXPECT_EQ(cut.ids, joined({range(0, 6), range(1000, 1001)}));
  EXPECT_EQ(cut.labels.back(), 1000);
}

TEST(SampleTruncation, AReplySpanOutsideTheSampleIsAnError) {
  EXPECT_THROW(truncate_keeping_reply(conversation(3, 3), {.begin = 7, .header = 0}, 4), Error);
  EXPECT_THROW(truncate_keeping_reply(conversation(3, 3), {.begin = 2, .header = 3}, 4), Error);
}

}  // namespace
}  // namespace zt::train
