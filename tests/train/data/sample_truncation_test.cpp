// The truncation rule on its own: LLaMA-Factory's cutoff_len, turn by turn with its
// infer_seqlen (the lengths below are what its Python gives), each part keeping its start; the
// later turns dropped once max_length is used up; what was cut counted.
#include <gtest/gtest.h>

#include <numeric>

#include "runtime/error.h"
#include "train/data/sample_truncation.h"

namespace zt::train {
namespace {

// Turns of `prompt` unlabelled ids then `reply` labelled ones, turn t's ids starting at
// 10000 * t (prompt) and 10000 * t + 1000 (reply).
struct Conversation {
  TokenizedSample sample;
  std::vector<Turn> turns;
};

Conversation conversation(std::vector<std::pair<int, int>> lengths) {
  Conversation c;
  for (std::size_t t = 0; t < lengths.size(); ++t) {
    const int base = 10000 * static_cast<int>(t);
    Turn turn{.prompt_begin = c.sample.ids.size()};
    for (int i = 0; i < lengths[t].first; ++i)
      c.sample.ids.push_back(base + i), c.sample.labels.push_back(kIgnoreIndex);
    turn.reply_begin = c.sample.ids.size();
    for (int i = 0; i < lengths[t].second; ++i)
      c.sample.ids.push_back(base + 1000 + i), c.sample.labels.push_back(base + 1000 + i);
    turn.end = c.sample.ids.size();
    c.turns.push_back(turn);
  }
  return c;
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

TEST(SampleTruncation, TurnLengthsAreLlamaFactorysInferSeqlen) {
  struct Case {
    std::size_t prompt, reply, budget, kept_prompt, kept_reply;
  };
  for (const Case& c : std::vector<Case>{{30, 5, 16, 11, 5},  // a short reply stays whole
                                         {100, 7, 16, 9, 7},
                                         {3, 30, 16, 3, 13},  // a short prompt stays whole
                                         {7, 100, 16, 7, 9},
                                         {10, 30, 16, 4, 12},  // both long: in proportion
                                         {20, 20, 16, 8, 8},
                                         {9, 9, 16, 8, 8},
                                         {300, 2000, 1024, 300, 724},
                                         {2000, 300, 1024, 724, 300},
                                         {5, 5, 20, 5, 5}}) {
    const TurnLengths kept = turn_lengths_within(c.prompt, c.reply, c.budget);
    EXPECT_EQ(kept.prompt, c.kept_prompt) << c.prompt << " + " << c.reply << " in " << c.budget;
    EXPECT_EQ(kept.reply, c.kept_reply) << c.prompt << " + " << c.reply << " in " << c.budget;
  }
}

TEST(SampleTruncation, ALongPromptKeepsItsStartAndTheShortReplyStaysWhole) {
  const Conversation c = conversation({{30, 5}});
  const Truncated cut = truncate_turns(c.sample, c.turns, 16);
  EXPECT_EQ(cut.sample.ids, joined({range(0, 11), range(1000, 1005)}));
  EXPECT_EQ(std::vector<std::int32_t>(cut.sample.labels.begin() + 11, cut.sample.labels.end()), range(1000, 1005));
  EXPECT_EQ(cut.sample.labels[10], kIgnoreIndex);
  EXPECT_EQ(cut.cut.prompt, 19u);
  EXPECT_EQ(cut.cut.reply, 0u);
  EXPECT_EQ(cut.cut.dropped_turns, 0u);
}

TEST(SampleTruncation, ALongReplyLosesItsTailAndLongPartsShareTheLength) {
  Conversation c = conversation({{3, 30}});
  Truncated cut = truncate_turns(c.sample, c.turns, 16);
  EXPECT_EQ(cut.sample.ids, joined({range(0, 3), range(1000, 1013)}));
  EXPECT_EQ(cut.cut.reply, 17u);
  c = conversation({{10, 30}});
  cut = truncate_turns(c.sample, c.turns, 16);
  EXPECT_EQ(cut.sample.ids, joined({range(0, 4), range(1000, 1012)}));
  EXPECT_EQ(cut.cut.prompt, 6u);
  EXPECT_EQ(cut.cut.reply, 18u);
}

// The first turn is cut within the whole length, the second within what is left; the third
// finds nothing left and goes whole, its tokens counted with the cut ones.
TEST(SampleTruncation, TurnsAreCutInOrderAndTheLaterOnesDroppedOnceTheLengthIsUsedUp) {
  const Conversation c = conversation({{4, 6}, {5, 20}, {3, 3}});
  const Truncated cut = truncate_turns(c.sample, c.turns, 16);
  // Turn 2 gets 6 tokens: both halves over 3, so in proportion: 6 * 20 / 25 = 4 for the reply.
  EXPECT_EQ(cut.sample.ids, joined({range(0, 4), range(1000, 1006), range(10000, 10002), range(11000, 11004)}));
  EXPECT_EQ(cut.cut.prompt, 3u + 3u);
  EXPECT_EQ(cut.cut.reply, 16u + 3u);
  EXPECT_EQ(cut.cut.dropped_turns, 1u);
}

TEST(SampleTruncation, SamplesThatFitAreUntouchedAndTextLosesItsTail) {
  const Conversation c = conversation({{6, 4}});
  const Truncated whole = truncate_turns(c.sample, c.turns, 10);
  EXPECT_EQ(whole.sample.ids, c.sample.ids);
  EXPECT_EQ(whole.cut.prompt + whole.cut.reply + whole.cut.dropped_turns, 0u);
  const TokenizedSample cut = truncate_tail(c.sample, 7);
  EXPECT_EQ(cut.ids, joined({range(0, 6), range(1000, 1001)}));
  EXPECT_EQ(cut.labels.back(), 1000);
}

TEST(SampleTruncation, TurnsThatDoNotCoverTheSampleAreAnError) {
  const Conversation c = conversation({{3, 3}});
  EXPECT_THROW(truncate_turns(c.sample, {{.prompt_begin = 0, .reply_begin = 3, .end = 5}}, 4), Error);
  EXPECT_THROW(truncate_turns(c.sample, {{.prompt_begin = 1, .reply_begin = 3, .end = 6}}, 4), Error);
  EXPECT_THROW(truncate_turns(c.sample, {{.prompt_begin = 0, .reply_begin = 4, .end = 3}}, 4), Error);
}

}  // namespace
}  // namespace zt::train
