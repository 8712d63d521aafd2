// Malformed tokenizer files that once crashed, hung or ran out of memory instead of being
// refused (found by the fuzz/ targets): each is now an error naming the file and what is
// wrong, and nothing bigger than the file is allocated on the way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/common/op_test_util.h"
#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/tokenizer_config.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zt::models {
namespace {

using nlohmann::json;
using testing::error_of;
using testing::expect_mentions;

class TokenizerFileErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tokenizers_available()) GTEST_SKIP() << tokenizer_support_message();
  }
};

// A byte-level tokenizer.json of the 256 bytes (ids 0..255) with [gMASK] 256 added.
json byte_tokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens", json::array({{{"id", 256}, {"content", "[gMASK]"}, {"special", true}}})}};
}

std::string load_error(const json& file) {
  return error_of([&] { parse_tokenizer_json(file.dump(), "m/tokenizer.json", TokenizerConfig{}); });
}

TEST_F(TokenizerFileErrors, ByteTokenizerLoads) {
  auto tokenizer = parse_tokenizer_json(byte_tokenizer().dump(), "m/tokenizer.json", TokenizerConfig{});
  EXPECT_EQ(tokenizer->vocab_size(), 257);
  EXPECT_EQ(tokenizer->encode("[gMASK]a", false), (std::vector<TokenId>{256, 'a'}));
}

// The post-processor's ids went into every encoding unchecked, past the vocabulary.
TEST_F(TokenizerFileErrors, PostProcessorIdOutsideTheVocabulary) {
  json file = byte_tokenizer();
  file["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "[gMASK]"}}}}, {{"Sequence", {{"id", "A"}}}}})},
      {"special_tokens", {{"[gMASK]", {{"id", "[gMASK]"}, {"ids", {556}}}}}}};
  expect_mentions(load_error(file), {"m/tokenizer.json", "post_processor", "556", "0..256"});
  file["post_processor"]["special_tokens"]["[gMASK]"]["ids"] = {"x"};
  expect_mentions(load_error(file), {"m/tokenizer.json", "[gMASK]", "token id", "\"x\""});
  file["post_processor"]["single"] = json::array({7});
  expect_mentions(load_error(file), {"post_processor", "special token ''"});
}

// Each of these threw the JSON library's type_error, or allocated as many entries as an id said.
TEST_F(TokenizerFileErrors, WrongTypesAndImpossibleIds) {
  json file = byte_tokenizer();
  file["added_tokens"][0]["id"] = "256";
  expect_mentions(load_error(file), {"m/tokenizer.json", "added_tokens", "token id", "\"256\""});
  file = byte_tokenizer();
  file["added_tokens"][0]["id"] = 2147483647;
  expect_mentions(load_error(file), {"added_tokens", "16777215", "2147483647"});
  file = byte_tokenizer();
  file["added_tokens"][0]["content"] = 5;
  expect_mentions(load_error(file), {"added_tokens", "'content'", "string"});
  file = byte_tokenizer();
  file["model"]["vocab"]["far"] = 1000000;
  expect_mentions(load_error(file), {"model.vocab", "1000000", "257 tokens"});
  file = byte_tokenizer();
  file["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", 3}};
  expect_mentions(load_error(file), {"Split", "'behavior'", "string"});
}

TEST_F(TokenizerFileErrors, TokenizerConfigIdsAndTemplates) {
  const char* file = "m/tokenizer_config.json";
  auto config_error = [&](const std::string& text) { return error_of([&] { parse_tokenizer_config(text, file); }); };
  for (const char* key : {"-5", "7x", " 7", "99999999999", "16777216"})
    expect_mentions(config_error(R"({"added_tokens_decoder": {")" + std::string(key) + R"(": {"content": "<a>"}}})"),
                    {file, "added_tokens_decoder", key, "not a token id"});
  EXPECT_EQ(parse_tokenizer_config(R"({"added_tokens_decoder": {"16777215": {"content": "<a>"}}})", file)
                .added_tokens.at(0)
                .id,
            16777215);
  expect_mentions(config_error(R"({"chat_template": [{"name": "default", "template": 7}]})"),
                  {file, "chat_template", "default", "string"});
  expect_mentions(config_error(R"({"model_max_length": 1e400})"), {file, "not valid JSON"});
}

TEST_F(TokenizerFileErrors, TiktokenRankBeyondTheFileIsRefusedBeforeAllocating) {
  // Rank 999999999 once sized the vocabulary tables to a billion entries.
  expect_mentions(error_of([] { parse_tiktoken("ZA== 999999999\n", "m/tokenizer.model", TokenizerConfig{}); }),
                  {"m/tokenizer.model", "ranks are not 0..0 without gaps"});
  // A gap the tables can hold, and one beyond them, together: still a gap.
  expect_mentions(error_of([] { parse_tiktoken("IQ== 0\nIg== 2\nIw== 9\n", "m/tokenizer.model", TokenizerConfig{}); }),
                  {"ranks are not 0..2 without gaps"});
}

TEST_F(TokenizerFileErrors, TiktokenIsRecognisedWhereverItsFirstLineIs) {
  // The loader skips empty lines, so the format check must too, or the file goes to sentencepiece.
  EXPECT_TRUE(looks_like_tiktoken("\n\r\nIQ== 0\nIg== 1\n"));
  EXPECT_TRUE(looks_like_tiktoken("\ngI0= 0"));  // one line, no newline after it
  EXPECT_FALSE(looks_like_tiktoken("\n\n\x0a\x05hello"));
}

}  // namespace
}  // namespace zt::models
