// Encoding a dataset on several threads (--dataloader_num_workers) gives exactly the samples,
// in the same order, and the same counts as one thread; plain texts train every token and
// end with eos; an over-long conversation keeps its last reply, or is skipped and counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"
#include "train/data/sample_encoding.h"

namespace zt::train {
namespace {

const std::string kModel = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";
const std::string kData = std::string(ZT_SOURCE_DIR) + "/examples/data/alpaca_demo.json";

class SampleEncoding : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
    tokenizer_ = models::load_tokenizer(kModel);
    // Qwen3's layout: no default system prompt, so prompt lengths are the conversation's own.
    template_ = models::make_chat_template("qwen3");
    dataset_ = load_dataset(kData);
  }

  EncodedDataset encode(std::int64_t max_length, int workers) const {
    return encode_dataset(dataset_, *template_, *tokenizer_, {.max_length = max_length, .workers = workers});
  }

  std::unique_ptr<models::Tokenizer> tokenizer_;
  std::unique_ptr<models::ChatTemplate> template_;
  Dataset dataset_;
};

void expect_same(const EncodedDataset& a, const EncodedDataset& b, int workers) {
  EXPECT_EQ(a.truncated, b.truncated) << workers << " workers";
  EXPECT_EQ(a.skipped, b.skipped) << workers << " workers";
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
  // Short enough that most samples are cut.
  const EncodedDataset serial = encode(24, 0);
  ASSERT_GT(serial.truncated, 0u);
  for (int workers : {2, 5}) expect_same(serial, encode(24, workers), workers);
}

TEST_F(SampleEncoding, NegativeWorkersAreRefused) { EXPECT_THROW(encode(512, -1), Error); }

TEST_F(SampleEncoding, SkippedSamplesAreCountedOverAllWorkers) {
  const EncodedDataset serial =
      encode_dataset(dataset_, *template_, *tokenizer_, {.max_length = 40, .overlong = Overlong::kSkip});
  ASSERT_GT(serial.skipped, 0u);
  EXPECT_EQ(serial.truncated, 0u);
  EXPECT_EQ(serial.samples.size() + serial.skipped + serial.dropped, dataset_.size());
  for (const TokenizedSample& sample : serial.samples) EXPECT_LE(sample.ids.size(), 40u);
  EXPECT_EQ(serial.skipped, encode_dataset(dataset_, *template_, *tokenizer_,
                                           {.max_length = 40, .overlong = Overlong::kSkip, .workers = 3})
                                .skipped);
}

TEST_F(SampleEncoding, TextIsTokenizedWithTheTokenizersSpecialTokensThenEosAndFullyTrained) {
  const std::string text = "The cat sat on the mat. 猫が座った。";
  Dataset texts;
  texts.format = DataFormat::kText;
  texts.texts = {text};
  const EncodedDataset encoded = encode_dataset(texts, *template_, *tokenizer_, {.max_length = 512});
  ASSERT_EQ(encoded.samples.size(), 1u);
  const TokenizedSample& sample = encoded.samples[0];
  std::vector<models::TokenId> expected = tokenizer_->encode(text, true);
  ASSERT_GT(expected.size(), 5u);
  // The fixture's tokenizer_config.json names <|im_end|> as eos; Qwen adds no prefix.
  expected.push_back(*tokenizer_->token_to_id("<|im_end|>"));
  EXPECT_EQ(sample.ids, expected);
  EXPECT_EQ(sample.labels, expected);

  // Too long: the end goes (a text has no reply to keep), eos with it.
  const EncodedDataset cut = encode_dataset(texts, *template_, *tokenizer_, {.max_length = 4});
  EXPECT_EQ(cut.truncated, 1u);
  ASSERT_EQ(cut.samples.size(), 1u);
  EXPECT_EQ(cut.samples[0].ids, std::vector<std::int32_t>(expected.begin(), expected.begin() + 4));
}

Dataset conversations(std::vector<Conversation> samples) {
  Dataset data;
  data.format = DataFormat::kShareGpt;
  data.samples = std::move(samples);
  return data;
}

std::string words(int count, const std::string& word) {
  std::string out;
  for (int i = 0; i < count; ++i) out += word + std::to_string(i) + " ";
  return out;
}

// A conversation encoded whole, and cut to max_length.
class Truncation : public SampleEncoding {
 protected:
  std::pair<TokenizedSample, TokenizedSample> whole_and_cut(std::vector<models::ChatMessage> messages,
                                                            std::int64_t max_length) {
    const Dataset data = conversations({Conversation{std::move(messages)}});
    const EncodedDataset whole = encode_dataset(data, *template_, *tokenizer_, {.max_length = 1 << 20});
    const EncodedDataset cut = encode_dataset(data, *template_, *tokenizer_, {.max_length = max_length});
    EXPECT_EQ(whole.truncated, 0u);
    EXPECT_EQ(cut.truncated, 1u);
    EXPECT_EQ(cut.samples.at(0).ids.size(), static_cast<std::size_t>(max_length));
    return {whole.samples.at(0), cut.samples.at(0)};
  }
  // The reply's ids: the last run of labelled tokens, then what follows it (Qwen's "\n").
  static std::vector<std::int32_t> reply_of(const TokenizedSample& sample) {
    std::size_t begin = sample.labels.size();
    while (sample.labels[begin - 1] == kIgnoreIndex) --begin;
    while (sample.labels[begin - 1] != kIgnoreIndex) --begin;
    return {sample.ids.begin() + static_cast<std::ptrdiff_t>(begin), sample.ids.end()};
  }
  // "<|im_start|>assistant\n": what opens a Qwen reply.
  std::vector<std::int32_t> reply_header() const {
    std::vector<std::int32_t> header = {*tokenizer_->token_to_id("<|im_start|>")};
    for (models::TokenId id : tokenizer_->encode("assistant\n", false)) header.push_back(id);
    return header;
  }
  static bool starts_with(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& prefix) {
    return ids.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
  }
  static bool ends_with(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& suffix) {
    return ids.size() >= suffix.size() && std::equal(suffix.rbegin(), suffix.rend(), ids.rbegin());
  }
};

TEST_F(Truncation, ALongPromptIsCutInTheMiddleAndTheReplyStaysWhole) {
  auto [whole, cut] =
      whole_and_cut({{"system", "Be brief."}, {"user", words(300, "w")}, {"assistant", "Yes, it is."}}, 96);
  const std::vector<std::int32_t> reply = reply_of(whole);
  ASSERT_LT(reply.size(), 96u * 3 / 4);  // short enough to stay whole
  // The reply, its header and the start of the conversation (system prompt included) survive.
  std::vector<std::int32_t> opened = reply_header();
  opened.insert(opened.end(), reply.begin(), reply.end());
  EXPECT_TRUE(ends_with(cut.ids, opened));
  const std::size_t head = 96 - opened.size();
  EXPECT_TRUE(starts_with(cut.ids, std::vector<std::int32_t>(whole.ids.begin(), whole.ids.begin() + head)));
  EXPECT_EQ(reply_of(cut), reply);
  EXPECT_EQ(std::count_if(cut.labels.begin(), cut.labels.end(), [](std::int32_t l) { return l != kIgnoreIndex; }),
            std::count_if(whole.labels.begin(), whole.labels.end(), [](std::int32_t l) { return l != kIgnoreIndex; }));
}

TEST_F(Truncation, ALongReplyLosesOnlyItsTailBehindAShortPrompt) {
  auto [whole, cut] = whole_and_cut({{"user", "Count."}, {"assistant", words(300, "n")}}, 64);
  // The prompt is under a quarter of max_length: it stays whole and the reply fills the rest.
  EXPECT_EQ(cut.ids, std::vector<std::int32_t>(whole.ids.begin(), whole.ids.begin() + 64));
  EXPECT_EQ(cut.labels, std::vector<std::int32_t>(whole.labels.begin(), whole.labels.begin() + 64));
}

TEST_F(Truncation, ALongPromptAndALongReplyShareMaxLength) {
  auto [whole, cut] = whole_and_cut({{"user", words(300, "q")}, {"assistant", words(300, "a")}}, 64);
  // The prompt keeps its quarter (head and reply header), the reply the other three quarters.
  const std::vector<std::int32_t> header = reply_header();
  EXPECT_TRUE(
      starts_with(cut.ids, std::vector<std::int32_t>(whole.ids.begin(), whole.ids.begin() + 16 - header.size())));
  EXPECT_EQ(std::vector<std::int32_t>(cut.ids.begin() + 16 - header.size(), cut.ids.begin() + 16), header);
  EXPECT_TRUE(starts_with(reply_of(whole), std::vector<std::int32_t>(cut.ids.begin() + 16, cut.ids.end())));
  for (std::size_t i = 16; i < 64; ++i) EXPECT_EQ(cut.labels[i], cut.ids[i]) << i;
}

TEST_F(Truncation, MultiTurnKeepsTheLastReply) {
  auto [whole, cut] = whole_and_cut({{"user", "First question?"},
                                     {"assistant", words(200, "a")},
                                     {"user", "And the second?"},
                                     {"assistant", "Second answer."}},
                                    80);
  const std::vector<std::int32_t> last = reply_of(whole);
  EXPECT_EQ(reply_of(cut), last);
  EXPECT_TRUE(ends_with(cut.ids, last));
  // The first turn opens the cut sample; the middle, in the long first answer, is what went.
  const std::size_t head = 80 - last.size() - reply_header().size();
  EXPECT_TRUE(starts_with(cut.ids, std::vector<std::int32_t>(whole.ids.begin(), whole.ids.begin() + head)));
  EXPECT_TRUE(
      ends_with(std::vector<std::int32_t>(cut.ids.begin(), cut.ids.end() - static_cast<std::ptrdiff_t>(last.size())),
                reply_header()));
}

TEST_F(Truncation, SkippingLeavesOverLongConversationsOutAndCountsThem) {
  const Dataset data = conversations({Conversation{{{"user", "Hi"}, {"assistant", "Hello"}}},
                                      Conversation{{{"user", words(300, "w")}, {"assistant", "Fine"}}},
                                      Conversation{{{"user", "Bye"}, {"assistant", "Bye"}}}});
  const EncodedDataset encoded =
      encode_dataset(data, *template_, *tokenizer_, {.max_length = 64, .overlong = Overlong::kSkip});
  EXPECT_EQ(encoded.skipped, 1u);
  EXPECT_EQ(encoded.truncated, 0u);
  ASSERT_EQ(encoded.samples.size(), 2u);
  EXPECT_EQ(
      encoded.samples[1].ids,
      encode_dataset(conversations({data.samples[2]}), *template_, *tokenizer_, {.max_length = 64}).samples.at(0).ids);
}

// The texts of the runs of labelled tokens.
std::vector<std::string> trained_texts(const TokenizedSample& sample, const models::Tokenizer& tokenizer) {
  std::vector<std::string> out;
  std::vector<models::TokenId> run;
  for (std::size_t i = 0; i <= sample.labels.size(); ++i) {
    if (i < sample.labels.size() && sample.labels[i] != kIgnoreIndex) {
      run.push_back(sample.ids[i]);
    } else if (!run.empty()) {
      out.push_back(tokenizer.decode(run));
      run.clear();
    }
  }
  return out;
}

Conversation tool_conversation() {
  models::ChatMessage call{"assistant", ""};
  call.tool_calls = {{"get_weather", R"({"city":"Paris"})"}};
  return Conversation{{{"user", "Weather in Paris?"}, call, {"tool", "17"}, {"assistant", "It is 17."}},
                      {R"({"type":"function","function":{"name":"get_weather"}})"},
                      "data.json: sample 4"};
}

TEST_F(SampleEncoding, ToolCallsAreTrainedAndToolResultsAreNot) {
  const auto qwen = models::make_chat_template("qwen");
  const EncodedDataset encoded =
      encode_dataset(conversations({tool_conversation()}), *qwen, *tokenizer_, {.max_length = 4096});
  ASSERT_EQ(encoded.samples.size(), 1u);
  EXPECT_EQ(
      trained_texts(encoded.samples[0], *tokenizer_),
      (std::vector<std::string>{
          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>",
          "It is 17.<|im_end|>"}));
}

TEST_F(SampleEncoding, ATemplateWithoutToolsNamesTheSample) {
  const auto chatglm2 = models::make_chat_template("chatglm2");
  const std::string error = testing::error_of(
      [&] { encode_dataset(conversations({tool_conversation()}), *chatglm2, *tokenizer_, {.max_length = 4096}); });
  EXPECT_NE(error.find("data.json: sample 4: chat template 'chatglm2' has no tool format"), std::string::npos) << error;
}

}  // namespace
}  // namespace zt::train
