// Streaming decode: fed one id at a time it returns only whole characters, and all its
// pieces together equal Tokenizer::decode of the same ids.
#include <gtest/gtest.h>

#include <random>

#include "text/stream_decoder.h"
#include "text/tokenizer/tokenizer_utf8.h"

namespace zt::models {
namespace {

constexpr TokenId kSpecial = 256;

// Ids 0..255 are single bytes; 256 is a special token "<s>".
class ByteTokenizer final : public Tokenizer {
 public:
  ByteTokenizer() : Tokenizer("byte tokenizer") {}
  std::vector<TokenId> encode(std::string_view text, bool) const override { return {text.begin(), text.end()}; }
  void append_token_bytes(TokenId id, bool skip_special_tokens, DecodeState&, std::string& out) const override {
    require_valid_id(id);
    if (id == kSpecial) {
      if (!skip_special_tokens) out += "<s>";
    } else {
      out.push_back(static_cast<char>(id));
    }
  }
  std::optional<TokenId> token_to_id(std::string_view) const override { return std::nullopt; }
  std::string id_to_token(TokenId) const override { return {}; }
  std::int64_t vocab_size() const override { return 257; }
  bool is_special(TokenId id) const override { return id == kSpecial; }
  std::string_view format() const override { return "bytes"; }
};

std::vector<TokenId> bytes_of(std::string_view s) {
  std::vector<TokenId> ids;
  for (char c : s) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

TEST(StreamDecoder, HoldsBytesUntilTheCharacterCompletes) {
  ByteTokenizer tok;
  StreamDecoder stream(tok);
  EXPECT_EQ(stream.put('a'), "a");
  EXPECT_EQ(stream.put(0xE4), "");
  EXPECT_EQ(stream.put(0xB8), "");
  EXPECT_EQ(stream.pending_bytes(), 2u);
  EXPECT_EQ(stream.put(0xAD), "\xE4\xB8\xAD");  // 中
  EXPECT_EQ(stream.put(0xF0), "");
  EXPECT_EQ(stream.put(0x9F), "");
  EXPECT_EQ(stream.put(0x98), "");
  EXPECT_EQ(stream.put(0x80), "\xF0\x9F\x98\x80");  // 😀
  EXPECT_EQ(stream.pending_bytes(), 0u);
}

TEST(StreamDecoder, IllFormedBytesBecomeReplacementCharactersAtOnce) {
  ByteTokenizer tok;
  StreamDecoder stream(tok);
  EXPECT_EQ(stream.put(0xE4), "");
  EXPECT_EQ(stream.put('x'),
            "\xEF\xBF\xBD"
            "x");  // the 'x' shows E4 will never complete
  EXPECT_EQ(stream.put(0xFF), "\xEF\xBF\xBD");
  EXPECT_EQ(stream.put(0xF0), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");  // cut off at the end
  EXPECT_EQ(stream.put('y'), "y");
}

TEST(StreamDecoder, SkipsSpecialTokensWhenAsked) {
  ByteTokenizer tok;
  StreamDecoder keep(tok), skip(tok, /*skip_special_tokens=*/true);
  EXPECT_EQ(keep.put(kSpecial), "<s>");
  EXPECT_EQ(skip.put(kSpecial), "");
}

TEST(StreamDecoder, PiecesConcatenateToTheWholeDecodeOnRandomBytes) {
  ByteTokenizer tok;
  std::mt19937 rng(42);
  const std::vector<std::string> pool = {"a",        " ",    "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                                         "\xE4\xB8", "\xFF", "\x80",     "\xF0\x9F",     "\xED\xA0\x80"};
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    const int parts = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < parts; ++i) text += pool[rng() % pool.size()];
    std::vector<TokenId> ids = bytes_of(text);
    if (rng() % 3 == 0) ids.insert(ids.begin() + static_cast<std::ptrdiff_t>(rng() % ids.size()), kSpecial);
    StreamDecoder stream(tok);
    std::string streamed;
    for (TokenId id : ids) {
      const std::string piece = stream.put(id);
      ASSERT_EQ(utf8::first_invalid_offset(piece), piece.size()) << "trial " << trial;
      streamed += piece;
    }
    streamed += stream.finish();
    ASSERT_EQ(streamed, tok.decode(ids)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace zt::models
