// Micro-batch plans and packing: labels shifted within each sample, positions restarting,
// cu_seqlens at the boundaries, rows never over max_length, epochs reproducible by seed;
// padding to the longest sample of a micro-batch; global batches dealt to ranks so that
// every world size with the same global batch trains on the same samples in each step.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <span>

#include "tests/common/op_test_util.h"
#include "train/data/batching.h"

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

// Rank r's micro-batches of one step, gathered back into the global batch's order.
std::vector<std::size_t> step_samples(std::span<const BatchUnit> global_batch, std::int64_t micro, int world,
                                      std::size_t* passes_per_rank) {
  std::vector<std::vector<std::vector<std::size_t>>> dealt;
  for (int rank = 0; rank < world; ++rank) dealt.push_back(deal_global_batch(global_batch, micro, world, rank));
  for (const auto& mine : dealt) EXPECT_EQ(mine.size(), dealt[0].size()) << "every rank makes as many passes";
  *passes_per_rank = dealt[0].size();
  std::vector<std::size_t> samples;
  for (std::size_t slot = 0; slot < dealt[0].size(); ++slot)
    for (int rank = 0; rank < world; ++rank)
      samples.insert(samples.end(), dealt[rank][slot].begin(), dealt[rank][slot].end());
  return samples;
}

TEST(Dealing, EveryFactorisationOfTheGlobalBatchTakesTheSameSamplesInEachStep) {
  // 21 samples in global batches of 8: two full steps, then 5 samples (micro-batches of 2, 2, 1).
  const auto samples = of_lengths(std::vector<int>(21, 3));
  constexpr std::int64_t kMicro = 2, kGlobal = 8;
  for (std::int64_t epoch : {0, 1}) {
    const std::vector<BatchUnit> units = epoch_units(samples, 8, false, 5, epoch);
    std::vector<std::vector<std::size_t>> single_device_steps;
    for (const auto& [world, accumulation] : {std::pair{1, 4}, std::pair{2, 2}, std::pair{4, 1}}) {
      ASSERT_EQ(kMicro * accumulation * world, kGlobal);
      std::vector<std::vector<std::size_t>> steps;
      for (std::size_t first = 0; first < units.size(); first += kGlobal) {
        const std::span<const BatchUnit> global_batch(units.data() + first,
                                                      std::min<std::size_t>(kGlobal, units.size() - first));
        std::size_t passes = 0;
        steps.push_back(step_samples(global_batch, kMicro, world, &passes));
        EXPECT_LE(passes, static_cast<std::size_t>(accumulation));
      }
      if (world == 1) single_device_steps = steps;
      EXPECT_EQ(steps, single_device_steps)
          << "world " << world << ", accumulation " << accumulation << ", epoch " << epoch;
    }
    ASSERT_EQ(single_device_steps.size(), 3u);
    EXPECT_EQ(single_device_steps[2].size(), 5u);
    std::multiset<std::size_t> seen;
    for (const auto& step : single_device_steps) seen.insert(step.begin(), step.end());
    EXPECT_EQ(seen.size(), samples.size());
    EXPECT_EQ(std::set<std::size_t>(seen.begin(), seen.end()).size(), samples.size()) << "every sample once an epoch";
  }
}

TEST(Dealing, RanksTakeMicroBatchesInTurnAndAShortBatchLeavesTheLastRanksEmpty) {
  const std::vector<BatchUnit> global_batch = {{0}, {1}, {2}, {3}, {4}};
  using Batches = std::vector<std::vector<std::size_t>>;
  EXPECT_EQ(deal_global_batch(global_batch, 1, 2, 0), (Batches{{0}, {2}, {4}}));
  EXPECT_EQ(deal_global_batch(global_batch, 1, 2, 1), (Batches{{1}, {3}, {}}));
  EXPECT_EQ(deal_global_batch(global_batch, 2, 2, 0), (Batches{{0, 1}, {4}}));
  EXPECT_EQ(deal_global_batch(global_batch, 2, 2, 1), (Batches{{2, 3}, {}}));
  EXPECT_EQ(deal_global_batch(global_batch, 2, 4, 3), (Batches{{}}));
  const std::string msg = testing::error_of([&] { deal_global_batch(global_batch, 1, 2, 2); });
  EXPECT_NE(msg.find("rank 2 is outside a world of 2"), std::string::npos) << msg;
}

TEST(Dealing, WithPackingTheUnitDealtIsARow) {
  const auto samples = of_lengths({3, 5, 2, 7, 1, 4, 6, 8, 2, 3, 3});
  const std::vector<BatchUnit> rows = epoch_units(samples, 8, true, 3, 0);
  ASSERT_GE(rows.size(), 4u);
  const std::span<const BatchUnit> global_batch(rows.data(), 4);
  auto rows_joined = [&](std::size_t a, std::size_t b) {
    std::vector<std::size_t> joined = rows[a];
    joined.insert(joined.end(), rows[b].begin(), rows[b].end());
    return joined;
  };
  // Two rows a micro-batch, on two ranks: rank 0 rows 0 and 1, rank 1 rows 2 and 3.
  EXPECT_EQ(deal_global_batch(global_batch, 2, 2, 0), (std::vector<std::vector<std::size_t>>{rows_joined(0, 1)}));
  EXPECT_EQ(deal_global_batch(global_batch, 2, 2, 1), (std::vector<std::vector<std::size_t>>{rows_joined(2, 3)}));
  EXPECT_EQ(plan_epoch(samples, 2, 8, true, 3, 0).front(), rows_joined(0, 1));
}

TEST(Dealing, AFillerRunsASampleWithoutLabels) {
  const std::vector<TokenizedSample> samples = {sample({10, 11, 12, 13}, 1)};
  const PackedBatch real = pack(samples, {0});
  const PackedBatch filler = filler_batch(samples, 0);
  EXPECT_EQ(filler.input_ids, real.input_ids);
  EXPECT_EQ(filler.cu_seqlens, real.cu_seqlens);
  EXPECT_EQ(filler.labels, (std::vector<std::int32_t>(4, kIgnoreIndex)));
  EXPECT_EQ(filler.label_tokens, 0);
  EXPECT_TRUE(filler.filler);
  EXPECT_FALSE(real.filler);
}

}  // namespace
}  // namespace zt::train
