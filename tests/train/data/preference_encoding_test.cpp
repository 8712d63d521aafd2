// Preference pairs through the chat template: each side is the prompt's tokens (with the
// generation prompt) then its answer's, labels on the answer only; the same pair written in
// any layout encodes the same; an over-long pair is cut as LLaMA-Factory's pairwise processor
// cuts it, or skipped; workers give the same pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "runtime/error.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"
#include "train/data/preference_data.h"

namespace zt::train {
namespace {

const std::string kModel = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";
const std::string kDemo = std::string(ZT_SOURCE_DIR) + "/examples/data/dpo_demo.json";

std::string words(int count, const std::string& word) {
  std::string out;
  for (int i = 0; i < count; ++i) out += word + std::to_string(i) + " ";
  return out;
}

class PreferenceEncoding : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
    tokenizer_ = models::load_tokenizer(kModel);
    // "own_<name>": the model family's own template; else LLaMA-Factory's of that name.
    const std::string name = GetParam();
    template_ =
        name.starts_with("own_") ? models::make_model_chat_template(name.substr(4)) : models::make_chat_template(name);
  }

  EncodedPreferences encode(const PreferenceDataset& data, EncodeOptions options = {}) const {
    return encode_preferences(data, *template_, *tokenizer_, options);
  }

  std::vector<std::int32_t> prompt_ids(const PreferenceConversation& pair) const {
    const auto ids = template_->encode(*tokenizer_, pair.prompt.messages, true, pair.prompt.tools).ids;
    return {ids.begin(), ids.end()};
  }

  // The conversation that ends with `answer`, as SFT encodes it.
  TokenizedSample sft(const PreferenceConversation& pair, const models::ChatMessage& answer) const {
    Conversation conversation = pair.prompt;
    conversation.messages.push_back(answer);
    return encode_chat_sample(conversation, *template_, *tokenizer_, false).sample;
  }

  std::unique_ptr<models::Tokenizer> tokenizer_;
  std::unique_ptr<models::ChatTemplate> template_;
};

std::vector<std::int32_t> slice(const std::vector<std::int32_t>& v, std::size_t from, std::size_t to) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to)};
}

// Where a conversation's last answer begins: its last run of trained tokens.
std::size_t answer_begin(const TokenizedSample& sample) {
  std::size_t begin = sample.labels.size();
  while (begin > 0 && sample.labels[begin - 1] == kIgnoreIndex) --begin;
  while (begin > 0 && sample.labels[begin - 1] != kIgnoreIndex) --begin;
  return begin;
}

TEST_P(PreferenceEncoding, EachSideIsThePromptThenItsAnswerTrainedOnTheAnswerOnly) {
  const PreferenceDataset data = parse_preference_dataset(
      R"([{"instruction": "Spell out the digits.", "input": "4 2", "chosen": "four two", "rejected": "4 2",
           "system": "Be exact.", "history": [["Spell out 1.", "one"]]}])",
      "pairs.json");
  const EncodedPreferences encoded = encode(data);
  ASSERT_EQ(encoded.pairs.size(), 1u);
  EXPECT_EQ(encoded.truncated + encoded.skipped, 0u);
  const PreferenceConversation& pair = data.pairs[0];
  const std::vector<std::int32_t> prompt = prompt_ids(pair);
  for (const auto& [side, answer] :
       {std::pair{&encoded.pairs[0].chosen, &pair.chosen}, std::pair{&encoded.pairs[0].rejected, &pair.rejected}}) {
    const TokenizedSample whole = sft(pair, *answer);
    const std::size_t begin = answer_begin(whole);
    ASSERT_GT(side->ids.size(), prompt.size());
    // The prompt as rendered for generation, untrained.
    EXPECT_EQ(slice(side->ids, 0, prompt.size()), prompt);
    EXPECT_EQ(slice(side->labels, 0, prompt.size()), std::vector<std::int32_t>(prompt.size(), kIgnoreIndex));
    // Then the answer's tokens and labels as SFT has them, the end of turn trained.
    EXPECT_EQ(slice(side->ids, prompt.size(), side->ids.size()), slice(whole.ids, begin, whole.ids.size()));
    EXPECT_EQ(slice(side->labels, prompt.size(), side->ids.size()), slice(whole.labels, begin, whole.ids.size()));
    EXPECT_NE(std::find(side->labels.begin(), side->labels.end(), *tokenizer_->token_to_id("<|im_end|>")),
              side->labels.end());
    const std::vector<std::int32_t> answer_ids = slice(side->ids, prompt.size(), side->ids.size());
    const std::string text = tokenizer_->decode(std::vector<models::TokenId>(answer_ids.begin(), answer_ids.end()));
    EXPECT_NE(text.find(answer->content + "<|im_end|>"), std::string::npos) << text;
    // SFT trains the history's answer; the pair does not.
    EXPECT_TRUE(std::any_of(whole.labels.begin(), whole.labels.begin() + static_cast<std::ptrdiff_t>(begin),
                            [](std::int32_t label) { return label != kIgnoreIndex; }));
    // LLaMA-Factory's qwen3 renders the history's answer with its empty thought when training
    // and without it in a prompt (its encode_multiturn and encode_oneturn); elsewhere the pair's
    // side is SFT's conversation.
    if (std::string(GetParam()) != "qwen3") {
      EXPECT_EQ(side->ids, whole.ids);
    }
  }
}

TEST_P(PreferenceEncoding, EveryLayoutOfAPairEncodesTheSame) {
  const auto only = [&](const std::string& text) {
    const EncodedPreferences encoded = encode(parse_preference_dataset(text, "pairs.json"));
    EXPECT_EQ(encoded.pairs.size(), 1u);
    return encoded.pairs.at(0);
  };
  const PreferenceSample alpaca = only(R"([{"instruction": "sky?", "chosen": "blue", "rejected": "green"}])");
  const std::vector<PreferenceSample> others = {
      only(R"([{"conversations": [{"from": "human", "value": "sky?"}], "chosen": {"from": "gpt", "value": "blue"},
                "rejected": {"from": "gpt", "value": "green"}}])"),
      only(R"([{"prompt": "sky?", "chosen": "blue", "rejected": "green"}])"),
      only(R"([{"prompt": [{"role": "user", "content": "sky?"}], "chosen": [{"role": "assistant", "content": "blue"}],
                "rejected": [{"role": "assistant", "content": "green"}]}])"),
      only(R"([{"chosen": [{"role": "user", "content": "sky?"}, {"role": "assistant", "content": "blue"}],
                "rejected": [{"role": "user", "content": "sky?"}, {"role": "assistant", "content": "green"}]}])")};
  for (std::size_t i = 0; i < others.size(); ++i) {
    EXPECT_EQ(others[i].chosen.ids, alpaca.chosen.ids) << "layout " << i;
    EXPECT_EQ(others[i].chosen.labels, alpaca.chosen.labels) << "layout " << i;
    EXPECT_EQ(others[i].rejected.ids, alpaca.rejected.ids) << "layout " << i;
    EXPECT_EQ(others[i].rejected.labels, alpaca.rejected.labels) << "layout " << i;
  }
}

// LLaMA-Factory's pairwise processor: infer_seqlen(prompt, longer answer, cutoff_len), the
// prompt and both answers keeping their first tokens.
TEST_P(PreferenceEncoding, OverlongPairsAreCutAsLlamaFactoryCutsThem) {
  struct Case {
    int prompt_words, chosen_words, rejected_words;
    const char* branch;
  };
  for (const Case& c :
       {Case{60, 4, 2, "short answers: the prompt gives way"}, Case{2, 60, 10, "short prompt: the answer gives way"},
        Case{40, 50, 3, "both long: in proportion"}}) {
    SCOPED_TRACE(c.branch);
    PreferenceDataset data;
    data.pairs.push_back({Conversation{{{"user", words(c.prompt_words, "q")}}},
                          {"assistant", words(c.chosen_words, "c")},
                          {"assistant", words(c.rejected_words, "r")}});
    const EncodedPreferences whole = encode(data, {.max_length = 1 << 20});
    ASSERT_EQ(whole.pairs.size(), 1u);
    const std::size_t p = prompt_ids(data.pairs[0]).size();
    const std::size_t chosen = whole.pairs[0].chosen.ids.size() - p, rejected = whole.pairs[0].rejected.ids.size() - p;
    const std::size_t longer = std::max(chosen, rejected);
    const std::size_t m = (p + longer) * 3 / 4;  // 3/4 of the longer side's length
    // infer_seqlen by hand.
    std::size_t reply = 0;
    if (longer * 2 < m)
      reply = longer;
    else if (p * 2 < m)
      reply = m - p;
    else
      reply = m * longer / (p + longer);
    reply = std::min(reply, longer);
    const std::size_t kept_prompt = std::min(m - reply, p);
    const std::string branch = c.branch;
    if (branch.starts_with("short answers")) {
      EXPECT_LT(kept_prompt, p);
    } else if (branch.starts_with("short prompt")) {
      EXPECT_EQ(kept_prompt, p);
    } else {
      EXPECT_TRUE(kept_prompt < p && reply < longer);
    }

    const EncodedPreferences cut = encode(data, {.max_length = static_cast<std::int64_t>(m)});
    ASSERT_EQ(cut.pairs.size(), 1u);
    EXPECT_EQ(cut.truncated, 1u);
    const auto expect_side = [&](const TokenizedSample& side, const TokenizedSample& full, std::size_t answer) {
      std::vector<std::int32_t> ids = slice(full.ids, 0, kept_prompt);
      const std::vector<std::int32_t> kept_answer = slice(full.ids, p, p + std::min(reply, answer));
      ids.insert(ids.end(), kept_answer.begin(), kept_answer.end());
      EXPECT_EQ(side.ids, ids);
      EXPECT_EQ(slice(side.labels, 0, kept_prompt), std::vector<std::int32_t>(kept_prompt, kIgnoreIndex));
      EXPECT_EQ(slice(side.labels, kept_prompt, side.labels.size()),
                slice(full.labels, p, p + std::min(reply, answer)));
    };
    expect_side(cut.pairs[0].chosen, whole.pairs[0].chosen, chosen);
    expect_side(cut.pairs[0].rejected, whole.pairs[0].rejected, rejected);
    EXPECT_LE(cut.pairs[0].chosen.ids.size(), m);

    const EncodedPreferences skipped =
        encode(data, {.max_length = static_cast<std::int64_t>(m), .overlong = Overlong::kSkip});
    EXPECT_EQ(skipped.pairs.size(), 0u);
    EXPECT_EQ(skipped.skipped, 1u);
    EXPECT_EQ(skipped.truncated, 0u);
  }
}

// A worked example of the rule: 300 prompt and 500 answer tokens in 512 are both over half,
// so the answer keeps int(512 * 500 / 800) = 320 and the prompt the other 192.
TEST(PreferenceTruncationRule, WorkedExample) {
  EXPECT_EQ(turn_lengths_within(300, 500, 512).reply, 320u);
  EXPECT_EQ(turn_lengths_within(300, 500, 512).prompt, 192u);
  EXPECT_EQ(turn_lengths_within(600, 100, 512).reply, 100u);  // 100 < 256: the answer whole
  EXPECT_EQ(turn_lengths_within(600, 100, 512).prompt, 412u);
  EXPECT_EQ(turn_lengths_within(100, 600, 512).reply, 412u);  // 100 < 256: the prompt whole
  EXPECT_EQ(turn_lengths_within(100, 600, 512).prompt, 100u);
}

TEST_P(PreferenceEncoding, WorkersGiveTheSamePairsInTheSameOrder) {
  const PreferenceDataset demo = load_preference_dataset(kDemo);
  ASSERT_GE(demo.pairs.size(), 30u);
  const EncodedPreferences serial = encode(demo, {.max_length = 20});
  ASSERT_GT(serial.truncated, 0u);
  for (int workers : {2, 3, 1000}) {
    const EncodedPreferences parallel = encode(demo, {.max_length = 20, .workers = workers});
    EXPECT_EQ(parallel.truncated, serial.truncated);
    EXPECT_EQ(parallel.skipped, serial.skipped);
    ASSERT_EQ(parallel.pairs.size(), serial.pairs.size());
    for (std::size_t i = 0; i < serial.pairs.size(); ++i) {
      EXPECT_EQ(parallel.pairs[i].chosen.ids, serial.pairs[i].chosen.ids) << i << ", " << workers << " workers";
      EXPECT_EQ(parallel.pairs[i].rejected.labels, serial.pairs[i].rejected.labels) << i << ", " << workers;
    }
  }
}

// The demo's pairs all fit the default length, chosen spelled out and rejected echoed.
TEST_P(PreferenceEncoding, TheDemoPairsFitWhole) {
  const PreferenceDataset demo = load_preference_dataset(kDemo);
  const EncodedPreferences encoded = encode(demo, {.max_length = 1024});
  EXPECT_EQ(encoded.pairs.size(), demo.pairs.size());
  EXPECT_EQ(encoded.truncated + encoded.skipped, 0u);
  EXPECT_EQ(identical_pairs_note(kDemo, demo), "");
}

// A template's refusal names the record, as for SFT samples.
TEST(PreferenceTemplateRefusal, NamesTheRecord) {
  if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
  const auto tokenizer = models::load_tokenizer(kModel);
  const auto none = models::make_chat_template("none");  // no tool format
  const PreferenceDataset data = parse_preference_dataset(
      R"([{"instruction": "q", "chosen": "a", "rejected": "b"},
          {"instruction": "q", "chosen": "a", "rejected": "b", "tools": [{"name": "w"}]}])",
      "pairs.json");
  for (int workers : {0, 2}) {
    std::string msg;
    try {
      encode_preferences(data, *none, *tokenizer, {.workers = workers});
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("pairs.json: sample 1: chat template 'none' has no tool format"), std::string::npos) << msg;
  }
}

// LLaMA-Factory's glm4 (efficient eos) with GLM-4's special tokens: its pairwise processor
// appends eos to each answer before the cut, so a cut answer loses it (SFT keeps it).
TEST(PreferenceEfficientEos, EosEndsEachAnswerAndIsCutWithIt) {
  if (!models::tokenizers_available()) GTEST_SKIP() << models::tokenizer_support_message();
  constexpr std::int32_t kEos = 260;  // tiny_tiktoken's <|endoftext|>
  const auto tokenizer = models::load_tokenizer(std::string(ZT_SOURCE_DIR) + "/tests/data/tokenizer/tiny_tiktoken");
  const auto glm4 = models::make_chat_template("glm4");
  PreferenceDataset data;
  data.pairs.push_back({Conversation{{{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}}},
                        {"assistant", words(20, "a")},
                        {"assistant", "b"}});
  const EncodedPreferences whole = encode_preferences(data, *glm4, *tokenizer, {.max_length = 1 << 20});
  ASSERT_EQ(whole.pairs.size(), 1u);
  const auto prompt_ids = glm4->encode(*tokenizer, data.pairs[0].prompt.messages, true).ids;
  const std::size_t p = prompt_ids.size();
  for (const TokenizedSample* side : {&whole.pairs[0].chosen, &whole.pairs[0].rejected}) {
    EXPECT_EQ(slice(side->ids, 0, p), std::vector<std::int32_t>(prompt_ids.begin(), prompt_ids.end()));
    // The history's answer is not trained, nor is the eos SFT labels at the next <|user|>.
    EXPECT_EQ(slice(side->labels, 0, p), std::vector<std::int32_t>(p, kIgnoreIndex));
    EXPECT_EQ(side->ids.back(), kEos);
    EXPECT_EQ(slice(side->labels, p, side->ids.size()), slice(side->ids, p, side->ids.size()));
  }
  // The prompt is short, so the longer answer gives way and keeps max_length - prompt tokens.
  const std::size_t chosen = whole.pairs[0].chosen.ids.size() - p;
  const std::size_t m = 2 * p + 4;
  ASSERT_GT(chosen, m - p);
  const EncodedPreferences cut =
      encode_preferences(data, *glm4, *tokenizer, {.max_length = static_cast<std::int64_t>(m)});
  ASSERT_EQ(cut.truncated, 1u);
  EXPECT_EQ(cut.pairs[0].chosen.ids, slice(whole.pairs[0].chosen.ids, 0, m));
  EXPECT_NE(cut.pairs[0].chosen.ids.back(), kEos);
  EXPECT_EQ(cut.pairs[0].rejected.ids, whole.pairs[0].rejected.ids);  // shorter than its share: whole, eos kept
}

// LLaMA-Factory's qwen and qwen3 templates (qwen3 trains the answer's empty thought), and the
// model families' own (Qwen2.5's default system prompt, Qwen3's thinking).
INSTANTIATE_TEST_SUITE_P(Templates, PreferenceEncoding,
                         ::testing::Values("qwen", "qwen3", "qwen3_nothink", "own_qwen", "own_qwen3",
                                           "own_qwen3_nothink"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace zt::train
