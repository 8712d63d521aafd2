// Micro-batch plans and packing: labels shifted within each sample, positions restarting,
// cu_seqlens at the boundaries, rows never over max_length, epochs reproducible by seed;
// padding to the longest sample of a micro-batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/op_test_util.h"
#include "train/batching.h"

namespace zt::train {
namespace {

TokenizedSample sample(std::vector<std::int32_t> ids, std::size_t prompt_tokens) {
  TokenizedSample s{ids, ids};
  for (std::size_t i = 0; i < prompt_tokens; ++i) s.labels[i] = kIgnoreIndex;
  return s;
}

TEST(Batching, PackShiftsLabelsWithinEachSample) {
  std::vector<TokenizedSample> samples = {sample({10, 11, 12, 13}, 2), sample({20, 21, 22}, 1)};
  PackedBatch batch = pack(samples, {0, 1});
  EXPECT_EQ(batch.input_ids, (std::vector<std::int32_t>{10, 11, 12, 13, 20, 21, 22}));
  EXPECT_EQ(batch.positions, (std::vector<std::int32_t>{0, 1, 2, 3, 0, 1, 2}));
  EXPECT_EQ(batch.cu_seqlens, (std::vector<std::int32_t>{0, 4, 7}));
  // Position 1 predicts 12 (the first answer token); a sample's last token predicts nothing.
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{-100, 12, 13, -100, 21, 22, -100}));
  EXPECT_EQ(batch.label_tokens, 4);
}

TEST(Batching, PaddingFillsEachSampleToTheLongestWithUnlabelledPadTokens) {
  std::vector<TokenizedSample> samples = {sample({10, 11}, 1), sample({20, 21, 22, 23}, 2), sample({30, 31, 32}, 0)};
  const PackedBatch packed = pack(samples, {0, 1, 2});
  const PackedBatch batch = pack(samples, {0, 1, 2}, {.pad_to_longest = true, .pad_id = 99});
  EXPECT_EQ(batch.input_ids, (std::vector<std::int32_t>{10, 11, 99, 99, 20, 21, 22, 23, 30, 31, 32, 99}));
  EXPECT_EQ(batch.positions, (std::vector<std::int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  // The pad tokens sit in their sample's segment, after it.
  EXPECT_EQ(batch.cu_seqlens, (std::vector<std::int32_t>{0, 4, 8, 12}));
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{11, -100, -100, -100, -100, 22, 23, -100, 31, 32, -100, -100}));
  EXPECT_EQ(batch.label_tokens, packed.label_tokens);
  EXPECT_EQ(batch.label_tokens, 5);
}

std::vector<TokenizedSample> of_lengths(const std::vector<int>& lengths) {
  std::vector<TokenizedSample> samples;
  for (int length : lengths) samples.push_back(sample(std::vector<std::int32_t>(length, length), 0));
  return samples;
}

TEST(Batching, WithoutPackingEachBatchHoldsBatchSizeSamplesAndEverySampleOnce) {
  auto samples = of_lengths({3, 5, 2, 7, 1, 4, 6});
  auto plan = plan_epoch(samples, 3, 8, false, 42, 0);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].size(), 3u);
  EXPECT_EQ(plan[2].size(), 1u);
  std::multiset<std::size_t> seen;
  for (const auto& batch : plan) seen.insert(batch.begin(), batch.end());
  EXPECT_EQ(seen, (std::multiset<std::size_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(Batching, PackingFillsRowsUpToMaxLengthWithWholeSamples) {
  auto samples = of_lengths({3, 5, 2, 7, 1, 4, 6, 8, 2});
  auto plan = plan_epoch(samples, 1, 8, true, 7, 0);
  std::size_t total = 0;
  for (const auto& row : plan) {
    std::size_t tokens = 0;
    for (std::size_t index : row) tokens += samples[index].ids.size();
    EXPECT_LE(tokens, 8u);
    total += row.size();
  }
  EXPECT_EQ(total, samples.size());
  EXPECT_LT(plan.size(), samples.size());  // some rows hold several samples
}

TEST(Batching, EpochOrderDependsOnSeedAndEpochAndRepeats) {
  auto samples = of_lengths(std::vector<int>(50, 3));
  auto a = plan_epoch(samples, 1, 8, false, 1, 0);
  EXPECT_EQ(a, plan_epoch(samples, 1, 8, false, 1, 0));
  EXPECT_NE(a, plan_epoch(samples, 1, 8, false, 1, 1));
  EXPECT_NE(a, plan_epoch(samples, 1, 8, false, 2, 0));
  auto in_order = plan_epoch(samples, 1, 8, false, 1, 0, false);
  for (std::size_t i = 0; i < in_order.size(); ++i) EXPECT_EQ(in_order[i][0], i);
}

TEST(Batching, TooLongOrEmptySamplesAreErrors) {
  std::string msg = testing::error_of([] { plan_epoch(of_lengths({3, 9}), 1, 8, false, 0, 0); });
  EXPECT_NE(msg.find("sample 1 has 9 tokens, more than max_length 8"), std::string::npos) << msg;
  msg = testing::error_of([] { plan_epoch({TokenizedSample{}}, 1, 8, false, 0, 0); });
  EXPECT_NE(msg.find("sample 0 has no tokens"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train
