// Byte-level BPE read from tokenizer.json and from vocab.json + merges.txt, on a tiny
// vocabulary whose ids can be worked out by hand, and every refusal naming its file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "text/stream_decoder.h"
#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() / ("zt_tok_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  void write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary) << content;
  }

 private:
  fs::path path_;
};

// Ids 0..255 are the single bytes (in byte order); then the merges' results:
// 256 "Ġt", 257 "he", 258 "Ġthe", 259 "ll", 260 "hell". Added: 261 <|im_start|> (special),
// 262 <think> (not special).
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"l", "l"}, {"he", "ll"}};
constexpr TokenId kImStart = 261, kThink = 262;

json tiny_vocab() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  TokenId next = 256;
  for (const auto& [left, right] : kMerges) vocab[left + right] = next++;
  return vocab;
}

json added_token(const std::string& content, TokenId id, bool special) {
  return {{"id", id},        {"content", content},   {"special", special}, {"lstrip", false},
          {"rstrip", false}, {"single_word", false}, {"normalized", false}};
}

json tiny_tokenizer_json() {
  json merges = json::array();
  for (const auto& [left, right] : kMerges) merges.push_back(json::array({left, right}));
  return {
      {"version", "1.0"},
      {"added_tokens",
       json::array({added_token("<|im_start|>", kImStart, true), added_token("<think>", kThink, false)})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", json::array({{{"type", "Split"},
                                        {"pattern",
                                         {{"Regex",
                                           "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                                           "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                                        {"behavior", "Isolated"},
                                        {"invert", false}},
                                       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", tiny_vocab()}, {"merges", merges}}}};
}

class TokenizerJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tokenizers_available()) GTEST_SKIP() << tokenizer_support_message();
  }
  static std::string error_of(const std::string& dir) {
    try {
      load_tokenizer(dir);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  }
};

// " the" merges all the way to 258; " hello" to Ġ(32) hell(260) o(111); "the" after a
// special token to t(116) he(257); " é" (NFC-composed from e + U+0301) stays bytes.
const std::string kText = "<|im_start|>the<think> e\xCC\x81 the hello";
const std::vector<TokenId> kIds = {kImStart, 116, 257, kThink, 32, 0xC3, 0xA9, 258, 32, 260, 111};

TEST_F(TokenizerJsonTest, EncodesAndDecodesTheTinyVocabulary) {
  TempDir dir;
  dir.write("tokenizer.json", tiny_tokenizer_json().dump());
  auto tok = load_tokenizer(dir.str());
  EXPECT_EQ(tok->format(), "tokenizer.json");
  EXPECT_EQ(tok->encode(kText), kIds);
  EXPECT_EQ(tok->decode(kIds), "<|im_start|>the<think> \xC3\xA9 the hello");
  EXPECT_EQ(tok->decode(kIds, /*skip_special_tokens=*/true), "the<think> \xC3\xA9 the hello");
  EXPECT_EQ(tok->vocab_size(), 263);
  EXPECT_EQ(tok->token_to_id("Ġthe"), 258);
  EXPECT_EQ(tok->token_to_id("<think>"), kThink);
  EXPECT_EQ(tok->token_to_id("nope"), std::nullopt);
  EXPECT_EQ(tok->id_to_token(256), "Ġt");
  EXPECT_EQ(tok->id_to_token(kImStart), "<|im_start|>");
  EXPECT_TRUE(tok->is_special(kImStart));
  EXPECT_FALSE(tok->is_special(kThink));
  EXPECT_FALSE(tok->special_ids().eos.has_value());
}

TEST_F(TokenizerJsonTest, VocabAndMergesGiveTheSameIds) {
  TempDir dir;
  dir.write("vocab.json", tiny_vocab().dump());
  std::string merges = "#version: 0.2\n";
  for (const auto& [left, right] : kMerges) merges += left + " " + right + "\n";
  dir.write("merges.txt", merges);
  const json config = {
      {"tokenizer_class", "Qwen2Tokenizer"},
      {"eos_token", "<|im_start|>"},
      {"added_tokens_decoder",
       {{"261", added_token("<|im_start|>", kImStart, true)}, {"262", added_token("<think>", kThink, false)}}}};
  dir.write("tokenizer_config.json", config.dump());
  auto tok = load_tokenizer(dir.str());
  EXPECT_EQ(tok->format(), "vocab.json+merges.txt");
  EXPECT_EQ(tok->encode(kText), kIds);
  EXPECT_EQ(tok->special_ids().eos, kImStart);
}

TEST_F(TokenizerJsonTest, SpecialTokensComeFromTokenizerConfig) {
  TempDir dir;
  dir.write("tokenizer.json", tiny_tokenizer_json().dump());
  dir.write(
      "tokenizer_config.json",
      json({{"bos_token", {{"content", "<think>"}}}, {"eos_token", "<|im_start|>"}, {"pad_token", nullptr}}).dump());
  auto tok = load_tokenizer(dir.str());
  EXPECT_EQ(tok->special_ids().bos, kThink);
  EXPECT_EQ(tok->special_ids().eos, kImStart);
  EXPECT_FALSE(tok->special_ids().pad.has_value());
  dir.write("tokenizer_config.json", json({{"eos_token", "<|missing|>"}}).dump());
  const std::string error = error_of(dir.str());
  EXPECT_NE(error.find("tokenizer_config.json: eos_token '<|missing|>' is not a token"), std::string::npos) << error;
}

TEST_F(TokenizerJsonTest, TemplateProcessingAddsItsTokensWhenAskedTo) {
  json file = tiny_tokenizer_json();
  file["post_processor"] = {
      {"type", "Sequence"},
      {"processors", json::array({{{"type", "ByteLevel"}},
                                  {{"type", "TemplateProcessing"},
                                   {"single", json::array({{{"SpecialToken", {{"id", "<|im_start|>"}, {"type_id", 0}}}},
                                                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                                           {{"SpecialToken", {{"id", "<think>"}, {"type_id", 0}}}}})},
                                   {"special_tokens",
                                    {{"<|im_start|>", {{"id", "<|im_start|>"}, {"ids", {kImStart}}}},
                                     {"<think>", {{"id", "<think>"}, {"ids", {kThink}}}}}}}})}};
  TempDir dir;
  dir.write("tokenizer.json", file.dump());
  auto tok = load_tokenizer(dir.str());
  EXPECT_EQ(tok->encode(" the", true), (std::vector<TokenId>{kImStart, 258, kThink}));
  EXPECT_EQ(tok->encode(" the", false), (std::vector<TokenId>{258}));
}

TEST_F(TokenizerJsonTest, RefusesWhatItDoesNotImplementNamingTheFile) {
  TempDir dir;
  json wordpiece = tiny_tokenizer_json();
  wordpiece["model"]["type"] = "WordPiece";
  dir.write("tokenizer.json", wordpiece.dump());
  std::string error = error_of(dir.str());
  EXPECT_NE(error.find("tokenizer.json: model type 'WordPiece' is not supported (supported: BPE)"), std::string::npos)
      << error;

  json bad_merge = tiny_tokenizer_json();
  bad_merge["model"]["merges"].push_back(json::array({"q", "zz"}));
  dir.write("tokenizer.json", bad_merge.dump());
  error = error_of(dir.str());
  EXPECT_NE(error.find("merge 5 uses 'zz', which is not in model.vocab"), std::string::npos) << error;

  json normalizer = tiny_tokenizer_json();
  normalizer["normalizer"] = {{"type", "Lowercase"}};
  dir.write("tokenizer.json", normalizer.dump());
  EXPECT_NE(error_of(dir.str()).find("normalizer type 'Lowercase' is not supported"), std::string::npos);

  dir.write("tokenizer.json", "{\"model\": ");
  error = error_of(dir.str());
  EXPECT_NE(error.find(dir.str() + "/tokenizer.json:1:11: not valid JSON"), std::string::npos) << error;

  dir.write("tokenizer.json", "[1, 2]");
  EXPECT_NE(error_of(dir.str()).find("not a tokenizers file"), std::string::npos);
}

TEST_F(TokenizerJsonTest, FolderErrorsSayWhatIsMissing) {
  TempDir dir;
  EXPECT_NE(error_of(dir.str()).find(
                "has no tokenizer: expected tokenizer.json, vocab.json + merges.txt, or tokenizer.model"),
            std::string::npos);
  dir.write("vocab.json", tiny_vocab().dump());
  EXPECT_NE(error_of(dir.str()).find("vocab.json but no merges.txt"), std::string::npos);
  EXPECT_NE(error_of(dir.str() + "/nowhere").find("does not exist"), std::string::npos);
  TempDir model;
  model.write("tokenizer.model", "\x01\x02 not a model at all");
  EXPECT_NE(error_of(model.str()).find("tokenizer.model: neither a sentencepiece model"), std::string::npos)
      << error_of(model.str());
  model.write("tokenizer.model", "version https://git-lfs.github.com/spec/v1\noid sha256:abc\n");
  EXPECT_NE(error_of(model.str()).find("Git LFS pointer"), std::string::npos);
}

TEST_F(TokenizerJsonTest, BadIdsAndBadTextAreErrors) {
  TempDir dir;
  dir.write("tokenizer.json", tiny_tokenizer_json().dump());
  auto tok = load_tokenizer(dir.str());
  try {
    tok->require_valid_id(263);  // how ids a user gives are checked
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("token id 263 is out of range [0, 263)"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(tok->require_valid_id(262));
  const std::vector<TokenId> negative = {1, -1};
  EXPECT_THROW(tok->decode(negative), std::exception);
  EXPECT_THROW(tok->id_to_token(263), std::exception);
  EXPECT_THROW(tok->id_to_token(-1), std::exception);
  try {
    tok->encode("ok\xC3");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte offset 2"), std::string::npos) << e.what();
  }
}

// A model whose embedding is padded past its tokenizer (Qwen2.5: 151936 rows, 151669 tokens)
// can generate an id the tokenizer has no token for: it decodes to nothing, as in HF's
// tokenizers, through decode and through the streamed decoding generation uses.
TEST_F(TokenizerJsonTest, AnIdPastTheTokenizerDecodesToNothing) {
  TempDir dir;
  dir.write("tokenizer.json", tiny_tokenizer_json().dump());
  auto tok = load_tokenizer(dir.str());
  const std::vector<TokenId> plain = {71, 72, 256}, padded = {263, 71, 72, 151760, 256, 264};
  const std::string text = tok->decode(plain);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(tok->decode(padded), text);
  EXPECT_EQ(tok->decode(padded, /*skip_special_tokens=*/true), text);
  StreamDecoder stream(*tok, /*skip_special_tokens=*/true);
  std::string streamed;
  for (TokenId id : padded) {
    const std::string piece = stream.put(id);
    if (id >= tok->vocab_size()) {
      EXPECT_EQ(piece, "") << id;
    }
    streamed += piece;
  }
  EXPECT_EQ(streamed + stream.finish(), text);
}

TEST_F(TokenizerJsonTest, DecodingBrokenUtf8GivesReplacementCharacters) {
  TempDir dir;
  dir.write("tokenizer.json", tiny_tokenizer_json().dump());
  auto tok = load_tokenizer(dir.str());
  // 中 is E4 B8 AD: only its first two bytes, then 'a'.
  EXPECT_EQ(tok->decode(std::vector<TokenId>{0xE4, 0xB8, 'a'}),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(tok->decode(std::vector<TokenId>{0xE4, 0xB8, 0xAD}), "\xE4\xB8\xAD");
}

}  // namespace
}  // namespace zt::models
