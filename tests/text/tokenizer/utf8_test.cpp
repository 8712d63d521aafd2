// UTF-8 repair (U+FFFD per maximal ill-formed subsequence, the Unicode recommendation HF's
// decoders follow), the streaming hold-back rule, the GPT-2 byte alphabet and NFC.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "runtime/error.h"
#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_utf8.h"

#if ZT_HAVE_TEXT
#include <utf8proc.h>
#endif

namespace zt::models {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(TokenizerUtf8, LossyReplacesEachMaximalIllFormedSubsequenceOnce) {
  EXPECT_EQ(utf8::to_valid_lossy("abc"), "abc");
  EXPECT_EQ(utf8::to_valid_lossy("\xE4\xB8\xAD"), "\xE4\xB8\xAD");  // 中 is kept
  // A lead byte and one continuation, then ASCII: the two bytes are one subpart.
  EXPECT_EQ(utf8::to_valid_lossy("\xE4\xB8"
                                 "a"),
            kFffd + "a");
  // F0 80: 80 is not a valid second byte after F0, so each byte is its own subpart.
  EXPECT_EQ(utf8::to_valid_lossy("\xF0\x80"), kFffd + kFffd);
  // A surrogate encoded in UTF-8 (ED A0 80) is three ill-formed bytes.
  EXPECT_EQ(utf8::to_valid_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(utf8::to_valid_lossy("\xFF"
                                 "b\xC0\xAF"),
            kFffd + "b" + kFffd + kFffd);
  // Truncated at the end: one replacement for the unfinished character.
  EXPECT_EQ(utf8::to_valid_lossy("x\xF0\x9F\x98"), "x" + kFffd);
  EXPECT_EQ(utf8::to_valid_lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
}

TEST(TokenizerUtf8, IncompleteTailHoldsOnlyUnfinishedCharacters) {
  EXPECT_EQ(utf8::incomplete_tail(""), 0u);
  EXPECT_EQ(utf8::incomplete_tail("ab"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("a\xE4"), 1u);
  EXPECT_EQ(utf8::incomplete_tail("a\xE4\xB8"), 2u);
  EXPECT_EQ(utf8::incomplete_tail("a\xE4\xB8\xAD"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8::incomplete_tail("\xE4"
                                  "a"),
            0u);                                     // already ill-formed: nothing to wait for
  EXPECT_EQ(utf8::incomplete_tail("\xED\xA0"), 0u);  // a surrogate can never complete
  EXPECT_EQ(utf8::incomplete_tail("\x80\x80"), 0u);  // stray continuation bytes
}

TEST(TokenizerUtf8, InvalidInputIsAnErrorNamingTheOffset) {
  EXPECT_EQ(utf8::first_invalid_offset("ok\xE4\xB8\xAD"), 5u);
  EXPECT_EQ(utf8::first_invalid_offset("ok\xE4\xB8"), 2u);
  try {
    utf8::require_valid("abc\xFF", "line 7");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 7: invalid UTF-8 at byte offset 3 (byte 0xFF)"), std::string::npos)
        << e.what();
  }
}

TEST(TokenizerUtf8, CodepointsRoundTrip) {
  for (std::uint32_t cp : {0x41u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x1F600u, 0x10FFFFu}) {
    std::string s;
    utf8::append_codepoint(cp, s);
    EXPECT_EQ(utf8::first_invalid_offset(s), s.size());
    std::size_t pos = 0;
    EXPECT_EQ(utf8::next_codepoint(s, pos), cp);
    EXPECT_EQ(pos, s.size());
  }
}

TEST(ByteLevelAlphabet, IsABijectionOntoPrintableCharacters) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& c = byte_level::char_for_byte(static_cast<std::uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second) << "byte " << b;
    std::string back;
    ASSERT_TRUE(byte_level::decode(c, back));
    EXPECT_EQ(back, std::string(1, static_cast<char>(b)));
  }
  // GPT-2's table: printable ASCII stands for itself, space is U+0120 "Ġ", newline U+010A "Ċ".
  EXPECT_EQ(byte_level::char_for_byte('a'), "a");
  EXPECT_EQ(byte_level::encode(" \n"), "\xC4\xA0\xC4\x8A");
  std::string bytes;
  EXPECT_FALSE(byte_level::decode("\xE4\xB8\xAD", bytes));  // 中 is not in the alphabet
}

class Nfc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tokenizers_available()) GTEST_SKIP() << tokenizer_support_message();
  }
};

TEST_F(Nfc, ComposesWhatUtf8procComposes) {
  EXPECT_EQ(utf8::nfc("e\xCC\x81"), "\xC3\xA9");                     // e + U+0301 -> é
  EXPECT_EQ(utf8::nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // jamo ᄀ + ᅡ -> 가
  EXPECT_EQ(utf8::nfc("\xE0\xAD\x87\xE0\xAC\xBE"), "\xE0\xAD\x8B");  // Oriya 0B47 + 0B3E -> 0B4B
  EXPECT_EQ(utf8::nfc("\xE2\x84\xAB"), "\xC3\x85");                  // Ångström sign -> Å
  EXPECT_EQ(utf8::nfc("abc 中文"), "abc 中文");
  EXPECT_FALSE(utf8::nfc_stable("e\xCC\x81"));
  EXPECT_TRUE(utf8::nfc_stable("plain ascii, 中文, かな, 한국어"));
}

#if ZT_HAVE_TEXT
std::string utf8proc_nfc(const std::string& text) {
  utf8proc_uint8_t* out = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(text.c_str()));
  std::string result(reinterpret_cast<const char*>(out));
  std::free(out);
  return result;
}

// The quick check may only say "stable" for text NFC leaves alone: every code point it
// passes must survive utf8proc's NFC unchanged, alone and after starters it might compose
// with (Latin, a Hangul leading jamo, a Hangul LV syllable, an Oriya vowel sign).
TEST_F(Nfc, QuickCheckNeverPassesAChangingCodepoint) {
  std::size_t stable = 0;
  for (std::uint32_t cp = 1; cp < 0x110000; ++cp) {
    // utf8proc composes an LV syllable with U+11A7 (one below the first trailing jamo),
    // dropping it; Unicode (and HF's normaliser) leave it alone, as the quick check does.
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0x11A7) continue;
    std::string s;
    utf8::append_codepoint(cp, s);
    if (!utf8::nfc_stable(s)) continue;
    ++stable;
    for (const char* before : {"", "e", "\xE1\x84\x80", "\xEA\xB0\x80", "\xE0\xAD\x87"}) {
      const std::string text = std::string(before) + s;
      if (utf8::nfc_stable(text)) {
        ASSERT_EQ(utf8proc_nfc(text), text) << "code point U+" << std::hex << cp;
      }
    }
  }
  EXPECT_GT(stable, 200000u);  // the fast path covers nearly everything
}
#endif

}  // namespace
}  // namespace zt::models
