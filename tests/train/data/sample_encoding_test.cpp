// Encoding a dataset on several threads (--dataloader_num_workers) gives exactly the samples,
// in the same order, and the same counts as one thread; plain texts train every token and
// end with eos; an over-long conversation is cut as LLaMA-Factory cuts it to cutoff_len, or is
// skipped, and counted.
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

// A conversation encoded whole, and cut to max_length as LLaMA-Factory cuts it to cutoff_len.
class Truncation : public SampleEncoding {
 protected:
  std::pair<TokenizedSample, EncodedDataset> whole_and_cut(std::vector<models::ChatMessage> messages,
                                                           std::int64_t max_length) {
    const Dataset data = conversations({Conversation{std::move(messages)}});
    const EncodedDataset whole = encode_dataset(data, *template_, *tokenizer_, {.max_length = 1 << 20});
    const EncodedDataset cut = encode_dataset(data, *template_, *tokenizer_, {.max_length = max_length});
    EXPECT_EQ(whole.truncated, 0u);
    EXPECT_EQ(cut.truncated, 1u);
    EXPECT_EQ(cut.samples.at(0).ids.size(), static_cast<std::size_t>(max_length));
    return {whole.samples.at(0), cut};
  }
  // Where the reply begins: the last run of labelled tokens.
  static std::size_t reply_begin(const TokenizedSample& sample) {
    std::size_t begin = sample.labels.size();
    while (sample.labels[begin - 1] == kIgnoreIndex) --begin;
    while (begin > 0 && sample.labels[begin - 1] != kIgnoreIndex) --begin;
    return begin;
  }
  // The first `prompt` ids of the sample, then `reply` ids from where its reply begins.
  static std::vector<std::int32_t> heads(const TokenizedSample& sample, std::size_t prompt, std::size_t reply) {
    const auto start = sample.ids.begin() + static_cast<std::ptrdiff_t>(reply_begin(sample));
    std::vector<std::int32_t> ids(sample.ids.begin(), sample.ids.begin() + static_cast<std::ptrdiff_t>(prompt));
    ids.insert(ids.end(), start, start + static_cast<std::ptrdiff_t>(reply));
    return ids;
  }
  std::string text(const std::vector<std::int32_t>& ids) const {
    return tokenizer_->decode(std::vector<models::TokenId>(ids.begin(), ids.end()), false);
  }
};

// The issue LLaMA-Factory's rule settles: the system prompt and the start of the question stay,
// and a short reply stays whole behind them.
TEST_F(Truncation, ALongQuestionKeepsTheSystemPromptAndItsStartAndTheShortReplyStaysWhole) {
  auto [whole, cut] =
      whole_and_cut({{"system", "Be brief."}, {"user", words(300, "w")}, {"assistant", "Yes, it is."}}, 96);
  const std::size_t reply = whole.ids.size() - reply_begin(whole);
  ASSERT_LT(reply * 2, 96u);  // short enough to stay whole
  const TokenizedSample& sample = cut.samples.at(0);
  EXPECT_EQ(sample.ids, heads(whole, 96 - reply, reply));
  EXPECT_NE(text(sample.ids).find("Be brief."), std::string::npos) << text(sample.ids);
  EXPECT_NE(text(sample.ids).find("w0 w1 w2"), std::string::npos) << text(sample.ids);
  EXPECT_EQ(cut.cut.prompt, whole.ids.size() - 96);
  EXPECT_EQ(cut.cut.reply, 0u);
  EXPECT_EQ(std::count_if(sample.labels.begin(), sample.labels.end(), [](std::int32_t l) { return l != kIgnoreIndex; }),
            std::count_if(whole.labels.begin(), whole.labels.end(), [](std::int32_t l) { return l != kIgnoreIndex; }));
}

TEST_F(Truncation, ALongReplyLosesOnlyItsTailBehindAShortPrompt) {
  auto [whole, cut] = whole_and_cut({{"user", "Count."}, {"assistant", words(300, "n")}}, 64);
  // The prompt is under half of max_length: it stays whole and the reply fills the rest.
  EXPECT_EQ(cut.samples.at(0).ids, std::vector<std::int32_t>(whole.ids.begin(), whole.ids.begin() + 64));
  EXPECT_EQ(cut.samples.at(0).labels, std::vector<std::int32_t>(whole.labels.begin(), whole.labels.begin() + 64));
  EXPECT_EQ(cut.cut.prompt, 0u);
  EXPECT_EQ(cut.cut.reply, whole.ids.size() - 64);
}

TEST_F(Truncation, ALongPromptAndALongReplyShareMaxLengthInProportion) {
  auto [whole, cut] = whole_and_cut({{"user", words(300, "q")}, {"assistant", words(200, "a")}}, 64);
  const std::size_t prompt = reply_begin(whole), reply = whole.ids.size() - prompt;
  const std::size_t kept_reply = 64 * reply / (prompt + reply);
  EXPECT_EQ(cut.samples.at(0).ids, heads(whole, 64 - kept_reply, kept_reply));
  EXPECT_EQ(cut.cut.prompt, prompt - (64 - kept_reply));
  EXPECT_EQ(cut.cut.reply, reply - kept_reply);
}

// Turns are cut in order: a long first answer uses max_length up, and the second turn is
// dropped, as LLaMA-Factory drops it.
TEST_F(Truncation, MultiTurnCutsInOrderAndDropsTheTurnsThatFindNoRoom) {
  auto [whole, cut] = whole_and_cut({{"user", "First question?"},
                                     {"assistant", words(200, "a")},
                                     {"user", "And the second?"},
                                     {"assistant", "Second answer."}},
                                    80);
  EXPECT_EQ(cut.samples.at(0).ids, std::vector<std::int32_t>(whole.ids.begin(), whole.ids.begin() + 80));
  EXPECT_EQ(cut.cut.dropped_turns, 1u);
  EXPECT_EQ(cut.cut.prompt + cut.cut.reply, whole.ids.size() - 80);
  EXPECT_EQ(text(cut.samples.at(0).ids).find("Second answer."), std::string::npos);
}

// The log line says how many samples were cut and what went from them.
TEST_F(Truncation, TheLogSaysWhatWasCut) {
  const Dataset data = conversations({Conversation{{{"user", words(300, "q")}, {"assistant", "Fine."}}},
                                      Conversation{{{"user", "Hi"}, {"assistant", "Hello"}}}});
  const EncodedDataset cut = encode_dataset(data, *template_, *tokenizer_, {.max_length = 64});
  ASSERT_EQ(cut.truncated, 1u);
  const std::string line = truncation_summary("data.json", cut, 64);
  EXPECT_NE(line.find("data.json: 1 sample(s) truncated to --max_length 64: " + std::to_string(cut.cut.prompt) +
                      " prompt tokens and 0 reply tokens cut"),
            std::string::npos)
      << line;
  EXPECT_GT(cut.cut.prompt, 0u);
  EXPECT_NE(line.find("LLaMA-Factory's cutoff_len"), std::string::npos) << line;
  EXPECT_EQ(truncation_summary("data.json", encode_dataset(data, *template_, *tokenizer_, {.max_length = 4096}), 4096),
            "");
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
  // LLaMA-Factory's qwen template: its response slot "{{content}}<|im_end|>\n" is trained whole.
  const auto qwen = models::make_chat_template("qwen");
  const EncodedDataset encoded =
      encode_dataset(conversations({tool_conversation()}), *qwen, *tokenizer_, {.max_length = 4096});
  ASSERT_EQ(encoded.samples.size(), 1u);
  EXPECT_EQ(
      trained_texts(encoded.samples[0], *tokenizer_),
      (std::vector<std::string>{
          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n",
          "It is 17.<|im_end|>\n"}));
  // Qwen2.5's own template leaves the newline after <|im_end|> to the next prompt.
  const auto own = models::make_model_chat_template("qwen");
  EXPECT_EQ(
      trained_texts(
          encode_dataset(conversations({tool_conversation()}), *own, *tokenizer_, {.max_length = 4096}).samples.at(0),
          *tokenizer_)
          .back(),
      "It is 17.<|im_end|>");
}

// LLaMA-Factory v1's messages (its sharegpt converter's output: text parts, loss_weight 1 on
// the assistant's messages, 0 on the others): loss_weight 0 on a reply leaves it untrained.
TEST_F(SampleEncoding, LossWeightZeroLeavesAReplyUntrained) {
  const auto qwen = models::make_chat_template("qwen");
  const std::string record =
      R"j({"messages": [{"role": "user", "content": [{"type": "text", "value": "Hi"}], "loss_weight": 0.0},)j"
      R"j({"role": "assistant", "content": [{"type": "text", "value": "Hello."}], "loss_weight": WEIGHT},)j"
      R"j({"role": "user", "content": [{"type": "text", "value": "Bye"}], "loss_weight": 0.0},)j"
      R"j({"role": "assistant", "content": [{"type": "text", "value": "Bye."}], "loss_weight": 1.0}]})j";
  auto encoded_with = [&](const std::string& weight) {
    std::string text = record;
    text.replace(text.find("WEIGHT"), 6, weight);
    return encode_dataset(parse_dataset(text + "\n", "v1.jsonl"), *qwen, *tokenizer_, {.max_length = 4096});
  };
  EXPECT_EQ(trained_texts(encoded_with("1.0").samples.at(0), *tokenizer_),
            (std::vector<std::string>{"Hello.<|im_end|>\n", "Bye.<|im_end|>\n"}));
  const EncodedDataset untrained = encoded_with("0");
  EXPECT_EQ(trained_texts(untrained.samples.at(0), *tokenizer_), (std::vector<std::string>{"Bye.<|im_end|>\n"}));
  EXPECT_EQ(untrained.samples.at(0).ids, encoded_with("1").samples.at(0).ids);  // the text is the same
  // --train_on_prompt trains every message: the pair is refused.
  std::string text = record;
  text.replace(text.find("WEIGHT"), 6, "0");
  testing::expect_mentions(testing::error_of([&] {
                             encode_dataset(parse_dataset(text + "\n", "v1.jsonl"), *qwen, *tokenizer_,
                                            {.max_length = 4096, .train_on_prompt = true});
                           }),
                           {"v1.jsonl: sample 0", "loss_weight", "--train_on_prompt"});
}

// OpenAI's fine-tuning guide, its multi-turn example: the reply with "weight": 0 is not trained.
TEST_F(SampleEncoding, OpenAiWeightZeroLeavesAReplyUntrained) {
  const auto qwen = models::make_chat_template("qwen");
  const Dataset data =
      load_dataset(std::string(ZT_SOURCE_DIR) + "/tests/data/training/published/openai_multiturn_weight.jsonl");
  const EncodedDataset encoded = encode_dataset(data, *qwen, *tokenizer_, {.max_length = 4096});
  EXPECT_EQ(trained_texts(encoded.samples.at(0), *tokenizer_),
            (std::vector<std::string>{"Paris, as if everyone doesn't know that already.<|im_end|>\n"}));
}

// LLaMA-Factory's glm4 (efficient_eos), with GLM-4's special tokens: the supervised processor
// labels the first token of each later prompt with eos, counts the final eos before the turns
// (total_length starts at 1) and appends it after cutting them.
class EfficientEos : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
    tokenizer_ = models::load_tokenizer(std::string(ZT_SOURCE_DIR) + "/tests/data/tokenizer/tiny_tiktoken");
  }
  static constexpr std::int32_t kEos = 260, kUser = 267;  // tiny_tiktoken's <|endoftext|>, <|user|>
  std::unique_ptr<models::Tokenizer> tokenizer_;
  const std::unique_ptr<models::ChatTemplate> glm4_ = models::make_chat_template("glm4");
};

// GLM-4's finetune_demo sample with tools: the tools on its system message are written in the
// system turn as GLM-4's tool prompt; the call (the assistant's JSON text) and the answer trained.
TEST_F(EfficientEos, Glm4FinetuneDemoToolsAreInTheSystemTurn) {
  const Dataset data =
      load_dataset(std::string(ZT_SOURCE_DIR) + "/tests/data/training/published/glm4_finetune_tools.jsonl");
  const TokenizedSample sample = encode_dataset(data, *glm4_, *tokenizer_, {.max_length = 1 << 20}).samples.at(0);
  const std::string text = tokenizer_->decode(std::vector<models::TokenId>(sample.ids.begin(), sample.ids.end()));
  const std::size_t tools = text.find("## get_recommended_books");
  ASSERT_NE(tools, std::string::npos) << text;
  EXPECT_LT(text.find("<|system|>"), tools);
  EXPECT_LT(tools, text.find("<|user|>")) << text;
  const std::vector<std::string> trained = trained_texts(sample, *tokenizer_);
  ASSERT_EQ(trained.size(), 2u);
  EXPECT_EQ(trained[0].rfind("\n{\"name\": \"get_recommended_books\"", 0), 0u) << trained[0];
  EXPECT_EQ(trained[1].rfind("\nBased on your interests", 0), 0u) << trained[1];
}

TEST_F(EfficientEos, EosIsTrainedAfterEachAnswerAndKeptThroughACut) {
  const Dataset data = conversations(
      {Conversation{{{"user", "q1"}, {"assistant", words(40, "a")}, {"user", "q2"}, {"assistant", "a2"}}}});
  const TokenizedSample whole = encode_dataset(data, *glm4_, *tokenizer_, {.max_length = 1 << 20}).samples.at(0);
  const auto second_user =
      static_cast<std::size_t>(std::find(whole.ids.begin() + 3, whole.ids.end(), kUser) - whole.ids.begin());
  ASSERT_LT(second_user, whole.ids.size());
  EXPECT_EQ(whole.labels[second_user], kEos);  // at <|user|>: eos, not <|user|>
  EXPECT_EQ(whole.labels[second_user + 1], kIgnoreIndex);
  EXPECT_EQ(whole.ids.back(), kEos);
  EXPECT_EQ(whole.labels.back(), kEos);

  // The first turn's prompt: [gMASK] <sop> <|user|> "\nq1" <|assistant|>; its answer up to the
  // second <|user|>. Cut to 40: the turns share 39 (infer_seqlen), the second turn finds no room.
  std::size_t prompt = 0;
  while (whole.labels[prompt] == kIgnoreIndex) ++prompt;
  const TurnLengths kept = turn_lengths_within(prompt, second_user - prompt, 39);
  const EncodedDataset cut = encode_dataset(data, *glm4_, *tokenizer_, {.max_length = 40});
  ASSERT_EQ(cut.truncated, 1u);
  std::vector<std::int32_t> expected(whole.ids.begin(), whole.ids.begin() + static_cast<std::ptrdiff_t>(kept.prompt));
  expected.insert(expected.end(), whole.ids.begin() + static_cast<std::ptrdiff_t>(prompt),
                  whole.ids.begin() + static_cast<std::ptrdiff_t>(prompt + kept.reply));
  expected.push_back(kEos);
  EXPECT_EQ(cut.samples.at(0).ids, expected);
  EXPECT_EQ(cut.samples.at(0).labels.back(), kEos);
  EXPECT_EQ(cut.cut.dropped_turns, 1u);
}

TEST_F(EfficientEos, TrainOnPromptIsRefusedAsLlamaFactoryRefusesIt) {
  const Dataset data = conversations({Conversation{{{"user", "q"}, {"assistant", "a"}}}});
  const std::string error = testing::error_of(
      [&] { encode_dataset(data, *glm4_, *tokenizer_, {.max_length = 64, .train_on_prompt = true}); });
  EXPECT_NE(error.find("--train_on_prompt: LLaMA-Factory's template 'glm4' trains eos"), std::string::npos) << error;
  // The model's own GLM-4 template trains the prompt as it is.
  const auto own = models::make_model_chat_template("glm4");
  const TokenizedSample sample =
      encode_dataset(data, *own, *tokenizer_, {.max_length = 64, .train_on_prompt = true}).samples.at(0);
  EXPECT_EQ(sample.labels.front(), sample.ids.front());
}

TEST_F(SampleEncoding, ATemplateWithoutToolsNamesTheSample) {
  const auto chatglm2 = models::make_model_chat_template("chatglm2");
  const std::string error = testing::error_of(
      [&] { encode_dataset(conversations({tool_conversation()}), *chatglm2, *tokenizer_, {.max_length = 4096}); });
  EXPECT_NE(error.find("data.json: sample 4: chat template 'chatglm2' has no tool format"), std::string::npos) << error;
}

}  // namespace
}  // namespace zt::train
