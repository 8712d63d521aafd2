// ChatGLM2/3's sentencepiece tokenizer, on a model trained here with libsentencepiece's
// trainer: round trips, decoding as libsentencepiece decodes, ChatGLM's special ids after
// the vocabulary, and special tokens written inside text.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "tests/common/tokenizer_test_util.h"
#include "text/stream_decoder.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::models {
namespace {

#if ZT_HAVE_TEXT
namespace fs = std::filesystem;

const std::vector<std::string> kSentences = {
    "The quick brown fox jumps over the lazy dog.",
    "ChatGLM is a bilingual language model.",
    "你好，世界！今天天气很好。",
    "机器学习和深度学习是人工智能的分支。",
    "Numbers like 12345 and 3.14159 appear in text.",
    "def add(a, b):\n    return a + b",
    "Hello, hello, hello world!",
};

// Trained once for the whole suite: a BPE model with byte fallback and no normalisation
// (newlines survive), like ChatGLM's.
class SentencePieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("zt_sp_" + std::to_string(::getpid()));
    testing::train_sentencepiece(kSentences, 2000, dir_, sp_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override { tok_ = load_tokenizer(dir_.string()); }

  std::vector<TokenId> sp_encode(const std::string& text) const {
    std::vector<int> ids;
    EXPECT_TRUE(sp_.Encode(text, &ids).ok());
    return {ids.begin(), ids.end()};
  }

  static inline fs::path dir_;
  static inline sentencepiece::SentencePieceProcessor sp_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SentencePieceTest, ChatGlmSpecialTokensFollowTheVocabulary) {
  const int n = sp_.GetPieceSize();
  EXPECT_EQ(tok_->format(), "sentencepiece");
  EXPECT_EQ(tok_->vocab_size(), n + 9);
  const std::vector<std::string> names = {"[MASK]",   "[gMASK]",       "[sMASK]",        "sop", "eop", "<|system|>",
                                          "<|user|>", "<|assistant|>", "<|observation|>"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(tok_->token_to_id(names[i]), n + static_cast<TokenId>(i)) << names[i];
    EXPECT_EQ(tok_->id_to_token(n + static_cast<TokenId>(i)), names[i]);
    EXPECT_TRUE(tok_->is_special(n + static_cast<TokenId>(i)));
  }
  EXPECT_EQ(tok_->special_ids().eos, sp_.eos_id());
  EXPECT_EQ(tok_->special_ids().bos, sp_.bos_id());
  EXPECT_EQ(tok_->special_ids().pad, sp_.unk_id());  // ChatGLM pads with <unk>
  EXPECT_EQ(tok_->token_to_id("</s>"), sp_.eos_id());
  EXPECT_EQ(tok_->token_to_id("certainly-not-a-piece"), std::nullopt);
}

TEST_F(SentencePieceTest, EncodesAsLibsentencepieceAndRoundTrips) {
  std::vector<std::string> texts = kSentences;
  texts.push_back("unseen: Ω≈ç 😀 emoji use byte fallback");
  for (const std::string& text : texts) {
    const std::vector<TokenId> ids = tok_->encode(text, false);
    EXPECT_EQ(ids, sp_encode(text)) << text;
    EXPECT_EQ(tok_->decode(ids), text);
    EXPECT_EQ(tok_->decode(ids), sp_.DecodeIds(std::vector<int>(ids.begin(), ids.end())));
  }
}

TEST_F(SentencePieceTest, RandomIdSequencesDecodeAsLibsentencepieceDoes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int> ids(1 + rng() % 12);
    // Skip byte pieces: libsentencepiece's replacement of broken byte runs is its own.
    for (int& id : ids) do
        id = static_cast<int>(rng() % sp_.GetPieceSize());
      while (sp_.IsByte(id));
    EXPECT_EQ(tok_->decode(std::vector<TokenId>(ids.begin(), ids.end())), sp_.DecodeIds(ids)) << "trial " << trial;
  }
}

TEST_F(SentencePieceTest, SpecialTokensInTextAreMatchedAndAddedInFront) {
  const int n = sp_.GetPieceSize();
  const TokenId gmask = n + 1, sop = n + 3, user = n + 6, assistant = n + 7;
  std::vector<TokenId> expected = {user};
  for (TokenId id : sp_encode("\nhello")) expected.push_back(id);
  expected.push_back(assistant);
  EXPECT_EQ(tok_->encode("<|user|>\nhello<|assistant|>", false), expected);
  std::vector<TokenId> with_prefix = {gmask, sop};
  with_prefix.insert(with_prefix.end(), expected.begin(), expected.end());
  EXPECT_EQ(tok_->encode("<|user|>\nhello<|assistant|>", true), with_prefix);
  // "sop" is also a word: inside text it stays text.
  EXPECT_EQ(tok_->encode("sop", false), sp_encode("sop"));
  // As ChatGLM decodes, text after a special token loses its leading sentencepiece space.
  std::vector<TokenId> ids = {gmask, sop, user};
  for (TokenId id : sp_encode("hello world")) ids.push_back(id);
  EXPECT_EQ(tok_->decode(ids), "[gMASK]sop<|user|>hello world");
  EXPECT_EQ(tok_->decode(ids, /*skip_special_tokens=*/true), "hello world");
}

// Dropping the dummy-prefix space after a special token depends on the tokens before: the
// stream must carry that state as decode does.
TEST_F(SentencePieceTest, StreamingDecodeMatchesDecode) {
  const std::vector<TokenId> ids = tok_->encode("[gMASK]<|user|>\nhello 你好 😀<|assistant|> world", true);
  StreamDecoder stream(*tok_);
  std::string streamed;
  for (TokenId id : ids) streamed += stream.put(id);
  streamed += stream.finish();
  EXPECT_EQ(streamed, tok_->decode(ids));
}
#else
TEST(SentencePieceTest, NeedsTokenizerSupport) { GTEST_SKIP() << tokenizer_support_message(); }
#endif

}  // namespace
}  // namespace zt::models
