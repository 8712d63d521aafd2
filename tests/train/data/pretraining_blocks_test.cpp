// LLaMA-Factory's pre-training stage: each text without special tokens and with eos, chained
// and cut into blocks of max_length with the last partial block dropped (packing, its default
// under pt), or one sample per text cut to max_length; every token trained; other data refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/op_test_util.h"
#include "text/tokenizer/tokenizer.h"
#include "train/data/pretraining_blocks.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen";

class PretrainingBlocks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
    tokenizer_ = models::load_tokenizer(kModel.string());
    texts_.format = DataFormat::kText;
    texts_.texts = {"the first text, a few words long", "a second one", "and a third text to end with"};
  }
  // Every text's ids, no special tokens, each followed by eos.
  std::vector<std::int32_t> chained() const {
    std::vector<std::int32_t> all;
    for (const std::string& text : texts_.texts) {
      const std::vector<std::int32_t> ids = tokenizer_->encode(text, false);
      all.insert(all.end(), ids.begin(), ids.end());
      all.push_back(*tokenizer_->special_ids().eos);
    }
    return all;
  }

  std::unique_ptr<models::Tokenizer> tokenizer_;
  Dataset texts_;
};

TEST_F(PretrainingBlocks, PackingChainsTheTextsIntoFullBlocks) {
  const std::vector<std::int32_t> all = chained();
  std::size_t block = 5;  // a block size that leaves a partial last block to drop
  while (all.size() % block == 0) ++block;
  const EncodedDataset out = pretraining_samples(texts_, "texts", *tokenizer_, static_cast<std::int64_t>(block), true);
  ASSERT_EQ(out.samples.size(), all.size() / block);
  for (std::size_t b = 0; b < out.samples.size(); ++b) {
    const std::vector<std::int32_t> expected(all.begin() + b * block, all.begin() + (b + 1) * block);
    EXPECT_EQ(out.samples[b].ids, expected) << "block " << b;
    EXPECT_EQ(out.samples[b].labels, expected) << "block " << b;
  }
  EXPECT_EQ(out.truncated, 0u);
}

// LLaMA-Factory's processor runs under datasets' map: preprocessing_batch_size texts are
// chained at a time (within each of preprocessing_num_workers shards), each batch's partial
// last block dropped, so a block never joins texts of two batches.
TEST_F(PretrainingBlocks, PackingChainsEachBatchOfTextsApart) {
  const auto ids_of = [&](std::size_t i) {
    std::vector<std::int32_t> ids = tokenizer_->encode(texts_.texts[i], false);
    ids.push_back(*tokenizer_->special_ids().eos);
    return ids;
  };
  const std::size_t block = 3;
  for (const auto& [num_proc, batch] : std::vector<std::pair<std::int64_t, std::size_t>>{{1, 2}, {1, 1}, {2, 1000}}) {
    // the batches: [0, 2) and [2, 3) for a batch of 2; one a text for 1; 2 shards [0, 2), [2, 3)
    std::vector<std::vector<std::size_t>> batches = batch == 1 ? std::vector<std::vector<std::size_t>>{{0}, {1}, {2}}
                                                               : std::vector<std::vector<std::size_t>>{{0, 1}, {2}};
    std::vector<std::vector<std::int32_t>> expected;
    for (const std::vector<std::size_t>& members : batches) {
      std::vector<std::int32_t> chained;
      for (std::size_t i : members) {
        const std::vector<std::int32_t> ids = ids_of(i);
        chained.insert(chained.end(), ids.begin(), ids.end());
      }
      for (std::size_t start = 0; start + block <= chained.size(); start += block)
        expected.emplace_back(chained.begin() + start, chained.begin() + start + block);
    }
    const EncodedDataset out = pretraining_samples(texts_, "texts", *tokenizer_, block, true, num_proc, batch);
    ASSERT_EQ(out.samples.size(), expected.size()) << num_proc << " shards, batch " << batch;
    for (std::size_t b = 0; b < expected.size(); ++b) EXPECT_EQ(out.samples[b].ids, expected[b]) << "block " << b;
  }
}

TEST_F(PretrainingBlocks, WithoutPackingEachTextIsASampleCutToMaxLength) {
  const EncodedDataset whole = pretraining_samples(texts_, "texts", *tokenizer_, 1000, false);
  ASSERT_EQ(whole.samples.size(), 3u);
  std::vector<std::int32_t> first = tokenizer_->encode(texts_.texts[0], false);
  first.push_back(*tokenizer_->special_ids().eos);
  EXPECT_EQ(whole.samples[0].ids, first);
  EXPECT_EQ(whole.samples[0].labels, first);
  const EncodedDataset cut = pretraining_samples(texts_, "texts", *tokenizer_, 4, false);
  ASSERT_EQ(cut.samples.size(), 3u);
  EXPECT_EQ(cut.truncated, 3u);
  EXPECT_EQ(cut.samples[0].ids, std::vector<std::int32_t>(first.begin(), first.begin() + 4));
}

TEST_F(PretrainingBlocks, OtherDataAndTooLittleTextAreRefused) {
  Dataset conversations;
  conversations.format = DataFormat::kAlpaca;
  std::string message =
      testing::error_of([&] { pretraining_samples(conversations, "alpaca.json", *tokenizer_, 16, true); });
  EXPECT_NE(message.find("alpaca.json: --stage pt trains on plain text"), std::string::npos) << message;
  message = testing::error_of([&] { pretraining_samples(texts_, "texts", *tokenizer_, 100000, true); });
  EXPECT_NE(message.find("fewer than one block of --max_length (cutoff_len) 100000"), std::string::npos) << message;
}

// run_clm.py: the tokenizer's own special tokens, no eos, chained and cut into blocks, the
// remainder dropped; over two shards each is chained apart.
TEST_F(PretrainingBlocks, RunClmChainsWithoutEosPerShard) {
  std::vector<std::int32_t> all;
  std::vector<std::vector<std::int32_t>> each;
  for (const std::string& text : texts_.texts) {
    each.push_back(tokenizer_->encode(text, true));
    all.insert(all.end(), each.back().begin(), each.back().end());
  }
  std::size_t block = 3;
  while (all.size() % block == 0) ++block;
  const EncodedDataset out = run_clm_blocks(texts_, "texts", *tokenizer_, static_cast<std::int64_t>(block), 1, 2);
  ASSERT_EQ(out.samples.size(), all.size() / block);
  for (std::size_t b = 0; b < out.samples.size(); ++b) {
    const std::vector<std::int32_t> expected(all.begin() + b * block, all.begin() + (b + 1) * block);
    EXPECT_EQ(out.samples[b].ids, expected) << "block " << b;
    EXPECT_EQ(out.samples[b].labels, expected) << "block " << b;
  }
  // num_proc 2: texts {0, 1} and {2} are chained apart, each dropping its own remainder.
  const EncodedDataset sharded = run_clm_blocks(texts_, "texts", *tokenizer_, 2, 2, 1);
  std::vector<std::int32_t> first = each[0];
  first.insert(first.end(), each[1].begin(), each[1].end());
  EXPECT_EQ(sharded.samples.size(), first.size() / 2 + each[2].size() / 2);
  const std::string message = testing::error_of([&] { run_clm_blocks(texts_, "texts", *tokenizer_, 100000, 1, 1); });
  EXPECT_NE(message.find("fewer than one block of --block_size 100000"), std::string::npos) << message;
}

}  // namespace
}  // namespace zt::train
