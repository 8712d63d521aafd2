// Encoding a dataset on several threads (--dataloader_num_workers) gives exactly the samples,
// in the same order, and the same truncated/dropped counts as one thread.
#include <gtest/gtest.h>

#include <string>

#include "models/chat_template.h"
#include "models/tokenizer.h"
#include "runtime/error.h"
#include "train/sample_encoding.h"

namespace zt::train {
namespace {

const std::string kModel = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";
const std::string kData = std::string(ZT_SOURCE_DIR) + "/examples/data/alpaca_demo.json";

class SampleEncoding : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
    tokenizer_ = models::load_tokenizer(kModel);
    template_ = models::make_chat_template("qwen");
    dataset_ = load_dataset(kData);
  }

  EncodedDataset encode(std::int64_t max_length, int workers) const {
    return encode_dataset(dataset_, *template_, *tokenizer_, max_length, false, workers);
  }

  std::unique_ptr<models::Tokenizer> tokenizer_;
  std::unique_ptr<models::ChatTemplate> template_;
  Dataset dataset_;
};

void expect_same(const EncodedDataset& a, const EncodedDataset& b, int workers) {
  EXPECT_EQ(a.truncated, b.truncated) << workers << " workers";
  EXPECT_EQ(a.dropped, b.dropped) << workers << " workers";
  ASSERT_EQ(a.samples.size(), b.samples.size()) << workers << " workers";
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    EXPECT_EQ(a.samples[i].ids, b.samples[i].ids) << "sample " << i << ", " << workers << " workers";
    EXPECT_EQ(a.samples[i].labels, b.samples[i].labels) << "sample " << i << ", " << workers << " workers";
  }
}

TEST_F(SampleEncoding, WorkersGiveTheSameSamplesInTheSameOrder) {
  const EncodedDataset serial = encode(512, 0);
  ASSERT_GT(serial.samples.size(), 10u);
  // More workers than samples, and counts that do not divide the samples evenly.
  for (int workers : {1, 2, 3, 7, 1000}) expect_same(serial, encode(512, workers), workers);
}

TEST_F(SampleEncoding, TruncatedAndDroppedAreCountedOverAllWorkers) {
  // Short enough that some answers are cut and some samples lose their whole answer.
  const EncodedDataset serial = encode(24, 0);
  ASSERT_GT(serial.truncated, 0u);
  for (int workers : {2, 5}) expect_same(serial, encode(24, workers), workers);
}

TEST_F(SampleEncoding, NegativeWorkersAreRefused) { EXPECT_THROW(encode(512, -1), Error); }

}  // namespace
}  // namespace zt::train
