// GLM-4's tiktoken-format tokenizer.model on a tiny hand-made file: merges by the rank of the
// merged bytes, GLM-4's three-digit numbers, its special tokens after the vocabulary, and
// [gMASK] <sop> in front when special tokens are added.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "text/tokenizer/tokenizer.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

// tests/data/tokenizer/tiny_tiktoken: ranks 0..255 are the bytes; 256 "ab", 257 "bc",
// 258 "abc", 259 "12". Specials from 260: <|endoftext|> 260, [MASK] 261, [gMASK] 262,
// [sMASK] 263, <sop> 264, <eop> 265, <|system|> 266, <|user|> 267, <|assistant|> 268,
// <|observation|> 269, image/video 270..273.
const fs::path kTiny = fs::path(ZT_SOURCE_DIR) / "tests/data/tokenizer/tiny_tiktoken";

std::string tiny_tiktoken() {
  std::ifstream in(kTiny / "tokenizer.model", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TiktokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tokenizers_available()) GTEST_SKIP() << tokenizer_support_message();
    dir_ = fs::temp_directory_path() / ("zt_tiktoken_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name, std::ios::binary) << text; }
  std::string error_of() {
    try {
      load_tokenizer(dir_.string());
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

TEST_F(TiktokenTest, EncodesWithGlm4Rules) {
  auto tok = load_tokenizer(kTiny.string());
  EXPECT_EQ(tok->format(), "tiktoken");
  // "abc" is one token; " " alone; "1234" -> "123" "4" and "123" -> "12" "3"; "abcb": "ab"
  // merges first (rank 256), then "ab"+"c" = "abc", leaving "b".
  const std::vector<TokenId> expected = {262, 264, 258, 32, 259, '3', '4', 267, 258, 'b'};
  EXPECT_EQ(tok->encode("abc 1234<|user|>abcb", /*add_special_tokens=*/true), expected);
  EXPECT_EQ(tok->encode("abc", false), std::vector<TokenId>{258});
  EXPECT_EQ(tok->decode(expected), "[gMASK]<sop>abc 1234<|user|>abcb");
  EXPECT_EQ(tok->decode(expected, true), "abc 1234abcb");
  EXPECT_EQ(tok->vocab_size(), 274);
  EXPECT_EQ(tok->token_to_id("<sop>"), 264);
  EXPECT_EQ(tok->token_to_id("<|end_of_video|>"), 273);
  EXPECT_EQ(tok->id_to_token(258), "abc");
  EXPECT_EQ(tok->id_to_token(32), "Ġ");  // bytes shown in GPT-2's byte alphabet
  EXPECT_EQ(tok->special_ids().eos, 260);
  EXPECT_EQ(tok->special_ids().pad, 260);
  EXPECT_TRUE(tok->is_special(262));
  EXPECT_FALSE(tok->is_special(258));
}

TEST_F(TiktokenTest, MalformedFilesAreErrorsWithTheLine) {
  write("tokenizer.model", tiny_tiktoken() + "YWJj 7\n");
  EXPECT_NE(error_of().find("tokenizer.model:261: rank 7 appears twice"), std::string::npos) << error_of();
  write("tokenizer.model", tiny_tiktoken() + "YWJj 999\n");
  EXPECT_NE(error_of().find("ranks are not 0..260 without gaps"), std::string::npos) << error_of();
  write("tokenizer.model", tiny_tiktoken() + "not base64! 260\n");
  EXPECT_NE(error_of().find("tokenizer.model:261: expected '<base64 token> <rank>'"), std::string::npos) << error_of();
}

}  // namespace
}  // namespace zt::models
