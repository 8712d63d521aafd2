// The real Qwen3 tokenizer against Hugging Face: every corpus line must give HF's ids, and
// the qwen3 chat template HF's apply_chat_template text. The expected files are written by
// scripts/tokenizer_expected.py; the tokenizer folder (11 MB) is not in the repository.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/common/tokenizer_test_util.h"
#include "text/chat_template/chat_template.h"
#include "text/stream_decoder.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_utf8.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::qwen_tokenizer_dir;

const fs::path kData = fs::path(ZT_SOURCE_DIR) / "tests/data/tokenizer";
const char* kRegenerate =
    "run `python3 scripts/tokenizer_expected.py` on a machine with Python tokenizers and transformers "
    "(see docs/TOKENIZERS.md) and commit its output";

// One JSON string per line; only '\n' ends a line.
std::vector<std::string> read_corpus() {
  std::ifstream in(kData / "corpus.txt", std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(json::parse(line).get<std::string>());
  return lines;
}

std::string ids_text(const std::vector<TokenId>& ids) { return json(ids).dump(); }

class Qwen3Tokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!tokenizers_available() || qwen_tokenizer_dir().empty()) return;
    tokenizer_ = load_tokenizer(qwen_tokenizer_dir()).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (!tokenizers_available()) GTEST_SKIP() << tokenizer_support_message();
    if (tokenizer_ == nullptr)
      GTEST_SKIP()
          << "the Qwen3 tokenizer folder is absent: set ZT_QWEN_TOKENIZER_DIR, or put tokenizer.json and "
             "tokenizer_config.json in <source>/.fixtures/qwen3-tokenizer or <source>/../shared/data/qwen3-tokenizer";
  }
  static inline Tokenizer* tokenizer_ = nullptr;
};

TEST_F(Qwen3Tokenizer, SpecialTokensAreThoseOfTheShippedFiles) {
  EXPECT_EQ(tokenizer_->format(), "tokenizer.json");
  EXPECT_EQ(tokenizer_->token_to_id("<|endoftext|>"), 151643);
  EXPECT_EQ(tokenizer_->token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(tokenizer_->token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(tokenizer_->special_ids().eos, 151645);  // eos_token <|im_end|>
  EXPECT_EQ(tokenizer_->special_ids().pad, 151643);  // pad_token <|endoftext|>
  EXPECT_FALSE(tokenizer_->special_ids().bos.has_value());
  EXPECT_TRUE(tokenizer_->is_special(151644));
  EXPECT_FALSE(tokenizer_->is_special(tokenizer_->token_to_id("<think>").value()));  // an added, non-special token
}

TEST_F(Qwen3Tokenizer, EveryCorpusLineMatchesHuggingFace) {
  const fs::path expected_path = kData / "qwen3_expected.jsonl";
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path << " is missing: " << kRegenerate;
  const std::vector<std::string> corpus = read_corpus();
  ASSERT_GE(corpus.size(), 2000u);
  std::ifstream in(expected_path);
  std::string line;
  std::size_t checked = 0, mismatches = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json entry = json::parse(line);
    const auto index = entry.at("line").get<std::size_t>();
    ASSERT_LT(index, corpus.size()) << "the expected file is for another corpus: " << kRegenerate;
    const auto expected = entry.at("ids").get<std::vector<TokenId>>();
    const std::vector<TokenId> got = tokenizer_->encode(corpus[index], false);
    if (got != expected && ++mismatches <= 10)
      ADD_FAILURE() << "corpus line " << index << ": " << json(corpus[index]).dump()
                    << "\n  HF:       " << ids_text(expected) << "\n  zerotune: " << ids_text(got);
    ++checked;
  }
  EXPECT_EQ(checked, corpus.size()) << "the expected file does not cover the corpus: " << kRegenerate;
  EXPECT_EQ(mismatches, 0u) << "of " << checked << " lines";
}

TEST_F(Qwen3Tokenizer, DecodeGivesBackTheNormalisedText) {
  for (const std::string& text : read_corpus()) {
    const std::vector<TokenId> ids = tokenizer_->encode(text, false);
    ASSERT_EQ(tokenizer_->decode(ids), utf8::nfc(text)) << json(text).dump();
    StreamDecoder stream(*tokenizer_);
    std::string streamed;
    for (TokenId id : ids) streamed += stream.put(id);
    ASSERT_EQ(streamed + stream.finish(), utf8::nfc(text)) << json(text).dump();
  }
}

TEST_F(Qwen3Tokenizer, ChatTemplateMatchesApplyChatTemplate) {
  const fs::path path = kData / "chat_template_expected.json";
  ASSERT_TRUE(fs::exists(path)) << path << " is missing: " << kRegenerate;
  std::ifstream in(path);
  const json expected = json::parse(in);
  ASSERT_FALSE(expected.at("conversations").empty());
  for (const json& c : expected.at("conversations")) {
    std::vector<ChatMessage> messages;
    for (const json& m : c.at("messages")) messages.push_back({m.at("role"), m.at("content")});
    const bool generation_prompt = c.at("add_generation_prompt").get<bool>();
    const auto chat = make_model_chat_template(c.at("template").get<std::string>());
    const std::string name = c.at("name");
    const std::string text = chat->render(messages, generation_prompt);
    EXPECT_EQ(text, c.at("text").get<std::string>()) << name;
    const auto ids = c.at("ids").get<std::vector<TokenId>>();
    EXPECT_EQ(tokenizer_->encode(text, false), ids) << name;
    // Encoding for training gives the same ids as long as no answer starts with whitespace
    // that would join the template's newline before it, as in these conversations.
    EXPECT_EQ(chat->encode(*tokenizer_, messages, generation_prompt).ids, ids) << name;
  }
}

}  // namespace
}  // namespace zt::models
