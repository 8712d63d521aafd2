// The first training sample as `zerotune train` prints it (LLaMA-Factory's example print): the
// whole rendered text, then only the trained tokens, with the counts; from the shipped tiny
// model's tokenizer and demo data through the real chat template.
#include <gtest/gtest.h>

#include <string>

#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"
#include "train/data/sample_encoding.h"
#include "train/report/sample_preview.h"

namespace zt::train {
namespace {

const std::string kModel = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";
const std::string kData = std::string(ZT_SOURCE_DIR) + "/examples/data/alpaca_demo.json";

TEST(SamplePreview, ShowsTheRenderedTextAndOnlyTheTrainedTokens) {
  if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
  auto tokenizer = models::load_tokenizer(kModel);
  auto chat_template = models::make_chat_template("qwen");
  EncodedDataset encoded = encode_dataset(load_dataset(kData), *chat_template, *tokenizer, {.max_length = 256});
  ASSERT_FALSE(encoded.samples.empty());
  const TokenizedSample& sample = encoded.samples.front();
  std::size_t trained = 0;
  for (std::int32_t label : sample.labels) trained += label != kIgnoreIndex;
  ASSERT_GT(trained, 0u);
  ASSERT_LT(trained, sample.ids.size());
  const std::string preview = sample_preview(sample, *tokenizer);
  const std::string head = "training example (first sample: " + std::to_string(sample.ids.size()) + " tokens, " +
                           std::to_string(trained) + " trained):\ninputs:\n";
  ASSERT_EQ(preview.rfind(head, 0), 0u) << preview;
  const std::size_t labels_at = preview.find("\nlabels:\n");
  ASSERT_NE(labels_at, std::string::npos) << preview;
  const std::string inputs = preview.substr(head.size(), labels_at - head.size());
  const std::string labels = preview.substr(labels_at + 9);
  EXPECT_EQ(inputs, tokenizer->decode(sample.ids));
  EXPECT_NE(inputs.find("<|im_start|>user"), std::string::npos) << "the template is shown: " << inputs;
  EXPECT_EQ(labels.find("<|im_start|>user"), std::string::npos) << "the prompt is not trained: " << labels;
  EXPECT_NE(labels.find("<|im_end|>"), std::string::npos) << "the reply's end is trained: " << labels;
  EXPECT_NE(inputs.find(labels.substr(0, labels.find("<|im_end|>"))), std::string::npos) << "the reply is in the input";
}

}  // namespace
}  // namespace zt::train
