// Preference pairs packed with each prompt stored once (train/data/batching.h,
// pack_pairs_sharing_prompts): the layout against pack()'s whole sequences, and the model's
// per-sequence log-probabilities and their gradients on it against the whole layout's, on the
// tiny model in float64 (the shared prompt rows' gradient is the sum of both sequences').
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/init.h"
#include "models/sequence_log_probs.h"
#include "tests/common/gradcheck.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/data/batching.h"
#include "train/evaluation.h"

namespace zt::train {
namespace {

constexpr std::int32_t kX = kIgnoreIndex;

// Pair 0 shares a 4-token prompt; pair 1 shares 2 tokens then differs inside the prompt; pair 2
// labels its prompt (trained on), so nothing of it can be left out.
std::vector<TokenizedSample> pairs() {
  return {{{3, 7, 13, 11, 30, 4}, {kX, kX, kX, kX, 30, 4}},
          {{3, 7, 13, 11, 5, 2, 8}, {kX, kX, kX, kX, 5, 2, 8}},
          {{9, 1, 4, 6, 8}, {kX, kX, kX, 6, 8}},
          {{9, 1, 2, 20}, {kX, kX, kX, 20}},
          {{12, 14, 16, 18}, {12, 14, 16, 18}},
          {{12, 14, 17}, {12, 14, 17}}};
}

const std::vector<std::size_t> kAll{0, 1, 2, 3, 4, 5};

TEST(PairPromptPacking, LeavesOutTheSharedPromptAndSeesEverySequenceWhole) {
  const std::vector<TokenizedSample> samples = pairs();
  const PackedBatch whole = pack(samples, kAll);
  const PackedBatch shared = pack(samples, kAll, {.share_pair_prompts = true});
  // Pair 0's rejected sequence keeps its tokens from the prompt's last (3 left out), pair 1's
  // from the second shared one (1 left out), pair 2's all.
  EXPECT_EQ(shared.input_ids.size(), whole.input_ids.size() - 4);
  EXPECT_EQ(shared.cu_seqlens, (std::vector<std::int32_t>{0, 6, 10, 15, 18, 22, 25}));
  EXPECT_EQ(shared.whole_sequences(), whole.cu_seqlens);
  EXPECT_EQ(shared.label_tokens, whole.label_tokens);
  EXPECT_EQ(shared.samples, whole.samples);
  const SharedPrefixRows& rows = shared.shared;
  ASSERT_EQ(rows.expand.size(), whole.input_ids.size());
  for (std::size_t w = 0; w < rows.expand.size(); ++w) {
    const auto t = static_cast<std::size_t>(rows.expand[w]);
    EXPECT_EQ(shared.input_ids[t], whole.input_ids[w]) << "whole row " << w;
    EXPECT_EQ(shared.positions[t], whole.positions[w]) << "whole row " << w;
    const bool own = rows.own_row[t] == static_cast<std::int32_t>(w);
    EXPECT_TRUE(own || rows.second_use[t] == static_cast<std::int32_t>(w)) << "whole row " << w;
    // A row read a second time is a left-out prompt row, whose label there is ignored.
    EXPECT_EQ(own ? shared.labels[t] : kX, whole.labels[w]) << "whole row " << w;
  }
  EXPECT_EQ(std::count_if(rows.second_use.begin(), rows.second_use.end(), [](std::int32_t w) { return w >= 0; }), 4);
  // Without the option, with padding, or for a single sample, every sequence is whole.
  EXPECT_TRUE(pack(samples, kAll).shared.empty());
  EXPECT_TRUE(pack(samples, kAll, {.pad_to_longest = true, .share_pair_prompts = true}).shared.empty());
  EXPECT_TRUE(filler_batch(samples, 0, {.share_pair_prompts = true}).shared.empty());
  EXPECT_THROW(pack_pairs_sharing_prompts(samples, {0, 1, 2}), Error);
}

TEST(PairPromptPacking, TheModelScoresAndDifferentiatesItAsTheWholeSequences) {
  const std::vector<TokenizedSample> samples = pairs();
  const std::vector<double> coefficients = {0.7, -1.3, 0.25, 2.0, -0.5, 1.1};
  const models::CausalLM whole_model = testing::random_tiny_model(3), shared_model = testing::random_tiny_model(3);
  const models::SequenceScorer whole(whole_model, device_batch(pack(samples, kAll), Device::cpu()));
  const models::SequenceScorer shared(shared_model,
                                      device_batch(pack(samples, kAll, {.share_pair_prompts = true}), Device::cpu()));
  ASSERT_EQ(shared.log_probs().sums.size(), 6u);
  for (std::size_t s = 0; s < 6; ++s) {
    EXPECT_NEAR(shared.log_probs().sums[s], whole.log_probs().sums[s], 1e-11) << "sequence " << s;
    EXPECT_EQ(shared.log_probs().label_tokens[s], whole.log_probs().label_tokens[s]) << "sequence " << s;
    EXPECT_NEAR(shared.log_probs().logit_sums[s], whole.log_probs().logit_sums[s], 1e-9) << "sequence " << s;
  }
  whole.weighted(coefficients, 2.0).backward();
  shared.weighted(coefficients, 2.0).backward();
  EXPECT_GT(testing::expect_same_parameter_gradients(shared_model, whole_model, 1e-10), 10);
}

}  // namespace
}  // namespace zt::train
