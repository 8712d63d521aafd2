// The pieces under every byte-level tokenizer: merging by rank (against a plain quadratic
// reference), the pre-tokenizer regexes with Oniguruma's \s, and added-token matching.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "text/tokenizer/added_tokens.h"
#include "text/tokenizer/bpe.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_regex.h"

namespace zt::models {
namespace {

// Single bytes take ids 0..255; each merge's result the next id.
struct TinyVocab {
  std::vector<std::string> bytes;
  struct Merge {
    TokenId left, right, merged;
  };
  std::vector<Merge> merges;  // in rank order
  TinyVocab() {
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
  }
  TokenId merge(TokenId left, TokenId right) {
    bytes.push_back(bytes[left] + bytes[right]);
    const auto id = static_cast<TokenId>(bytes.size() - 1);
    merges.push_back({left, right, id});
    return id;
  }
  std::unique_ptr<BytePairEncoder> encoder() const {
    auto bpe = std::make_unique<BytePairEncoder>(bytes, "tiny vocabulary");
    for (std::size_t rank = 0; rank < merges.size(); ++rank)
      bpe->add_merge(merges[rank].left, merges[rank].right, merges[rank].merged, static_cast<std::int32_t>(rank));
    return bpe;
  }
  // The textbook algorithm: merge the leftmost lowest-ranked pair until none applies.
  std::vector<TokenId> reference(std::string_view text) const {
    std::vector<TokenId> ids;
    for (char c : text) ids.push_back(static_cast<unsigned char>(c));
    for (;;) {
      std::size_t best_rank = merges.size(), best_pos = 0;
      for (std::size_t i = 0; i + 1 < ids.size(); ++i)
        for (std::size_t r = 0; r < best_rank; ++r)
          if (merges[r].left == ids[i] && merges[r].right == ids[i + 1]) {
            best_rank = r;
            best_pos = i;
            break;
          }
      if (best_rank == merges.size()) return ids;
      ids[best_pos] = merges[best_rank].merged;
      ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(best_pos) + 1);
    }
  }
};

std::vector<TokenId> encode(const BytePairEncoder& bpe, std::string_view piece) {
  std::vector<TokenId> out;
  bpe.encode(piece, out);
  return out;
}

TEST(BytePairEncoder, LowerRankMergesFirst) {
  TinyVocab v;
  const TokenId ab = v.merge('a', 'b');  // rank 0
  v.merge('b', 'c');                     // rank 1
  EXPECT_EQ(encode(*v.encoder(), "abc"), (std::vector<TokenId>{ab, 'c'}));
  TinyVocab w;
  const TokenId bc2 = w.merge('b', 'c');
  w.merge('a', 'b');
  EXPECT_EQ(encode(*w.encoder(), "abc"), (std::vector<TokenId>{'a', bc2}));
}

TEST(BytePairEncoder, TiesGoToTheLeftmostPair) {
  TinyVocab v;
  const TokenId aa = v.merge('a', 'a');
  EXPECT_EQ(encode(*v.encoder(), "aaa"), (std::vector<TokenId>{aa, 'a'}));
  const TokenId aaaa = v.merge(aa, aa);
  EXPECT_EQ(encode(*v.encoder(), "aaaaaaa"), (std::vector<TokenId>{aaaa, aa, 'a'}));
}

TEST(BytePairEncoder, MatchesTheQuadraticReferenceOnRandomVocabularies) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 30; ++trial) {
    TinyVocab v;
    std::vector<TokenId> pool = {'a', 'b', 'c', 'd'};
    for (int m = 0; m < 40; ++m) {
      const TokenId left = pool[rng() % pool.size()], right = pool[rng() % pool.size()];
      bool repeated = false;
      for (const auto& merge : v.merges) repeated = repeated || (merge.left == left && merge.right == right);
      if (!repeated) pool.push_back(v.merge(left, right));
    }
    const auto bpe_ptr = v.encoder();
    const BytePairEncoder& bpe = *bpe_ptr;
    for (int text_trial = 0; text_trial < 20; ++text_trial) {
      std::string text;
      const std::size_t length = 1 + rng() % 300;  // long pieces exercise the heap
      for (std::size_t i = 0; i < length; ++i) text.push_back("abcd"[rng() % 4]);
      ASSERT_EQ(encode(bpe, text), v.reference(text)) << "trial " << trial << " text " << text;
      ASSERT_EQ(encode(bpe, text), v.reference(text)) << "from the cache, text " << text;
    }
  }
}

TEST(BytePairEncoder, TiktokenRanksMergeAdjacentPartsIntoTokens) {
  // Ranks = ids; "ab" (256), "bc" (257), "abc" (258): "abc" is whole, "abcb" must merge.
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
  bytes.insert(bytes.end(), {"ab", "bc", "abc"});
  BytePairEncoder bpe(bytes, "ranks");
  bpe.add_merges_from_ranks();
  bpe.set_whole_piece_lookup(true);
  EXPECT_EQ(encode(bpe, "abc"), (std::vector<TokenId>{258}));
  // a b c b: "ab" (256) has the lowest rank, then "ab"+"c" = "abc" (258); "b" stays.
  EXPECT_EQ(encode(bpe, "abcb"), (std::vector<TokenId>{258, 'b'}));
  EXPECT_EQ(encode(bpe, "bcb"), (std::vector<TokenId>{257, 'b'}));
}

class PretokenizerRegexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tokenizers_available()) GTEST_SKIP() << tokenizer_support_message();
  }
  static std::vector<std::string> split(std::string_view pattern, std::string_view text) {
    PretokenizerRegex regex(pattern, "test pattern");
    std::vector<std::string_view> pieces;
    regex.split(text, pieces);
    return {pieces.begin(), pieces.end()};
  }
  using Pieces = std::vector<std::string>;
};

TEST_F(PretokenizerRegexTest, QwenPatternCutsWordsDigitsAndSpaces) {
  EXPECT_EQ(split(kQwenPretokenizerPattern, "Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split(kQwenPretokenizerPattern, "x = 12345;"), (Pieces{"x", " =", " ", "1", "2", "3", "4", "5", ";"}));
  EXPECT_EQ(split(kQwenPretokenizerPattern, "don't I'M"), (Pieces{"don", "'t", " I", "'M"}));
  EXPECT_EQ(split(kQwenPretokenizerPattern, "a\n\n  b"), (Pieces{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(split(kQwenPretokenizerPattern, "你好，世界"), (Pieces{"你好", "，世界"}));
}

TEST_F(PretokenizerRegexTest, Glm4PatternKeepsUpToThreeDigits) {
  EXPECT_EQ(split(kGlm4PretokenizerPattern, "1234567"), (Pieces{"123", "456", "7"}));
}

TEST_F(PretokenizerRegexTest, WhitespaceIncludesNextLineAsOnigurumaDoes) {
  // U+0085 is White_Space: two of them before a letter split like two spaces would.
  EXPECT_EQ(split(kQwenPretokenizerPattern,
                  "a\xC2\x85\xC2\x85"
                  "b"),
            (Pieces{"a", "\xC2\x85",
                    "\xC2\x85"
                    "b"}));
  EXPECT_EQ(split(kQwenPretokenizerPattern, "a  b"), (Pieces{"a", " ", " b"}));
}

TEST_F(PretokenizerRegexTest, GapsBetweenMatchesArePiecesToo) {
  EXPECT_EQ(split("[0-9]+", "ab12cd3"), (Pieces{"ab", "12", "cd", "3"}));
}

// A pattern that can match nothing (a mangled file's `(?:|'s)`): each empty match splits the
// text there, as HF's Split does, and the pieces are the text once, not ever longer prefixes.
TEST_F(PretokenizerRegexTest, EmptyMatchesSplitWithoutRepeatingText) {
  EXPECT_EQ(split("(?:|x)", "abc"), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(split("(?:|[0-9]+)", "ab12"), (Pieces{"a", "b", "1", "2"}));
  const std::string long_text(5000, 'a');
  std::size_t total = 0;
  for (const std::string& piece : split("(?:|x)", long_text)) total += piece.size();
  EXPECT_EQ(total, long_text.size());
}

TEST_F(PretokenizerRegexTest, TranslationRewritesOnlyWhitespaceClasses) {
  const std::string t = PretokenizerRegex::translate(R"([^\s\p{L}]\s+(?!\S)\d)", "p");
  EXPECT_EQ(t.find("\\s"), std::string::npos);
  EXPECT_EQ(t.find("\\S"), std::string::npos);
  EXPECT_NE(t.find("\\x{85}"), std::string::npos);
  EXPECT_NE(t.find("\\p{L}"), std::string::npos);
  EXPECT_NE(t.find("\\d"), std::string::npos);
  EXPECT_THROW(PretokenizerRegex::translate(R"([\S])", "p"), std::exception);
}

TEST_F(PretokenizerRegexTest, BadPatternNamesItsSource) {
  try {
    PretokenizerRegex regex("(unclosed", "some/tokenizer.json");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("some/tokenizer.json"), std::string::npos) << e.what();
  }
}

std::vector<std::pair<std::string, TokenId>> split(const AddedTokens& added, std::string_view text,
                                                   bool normalized = false) {
  std::vector<TextPiece> pieces;
  added.split(text, normalized, pieces);
  std::vector<std::pair<std::string, TokenId>> out;
  for (const TextPiece& p : pieces) out.emplace_back(std::string(p.text), p.id);
  return out;
}
using Split = std::vector<std::pair<std::string, TokenId>>;

TEST(AddedTokens, MatchesLeftmostThenLongest) {
  AddedTokens added;
  added.add({"<a>", 10});
  added.add({"<a><b>", 11});
  added.add({"<b>", 12});
  EXPECT_EQ(split(added, "x<a><b>y<b>"), (Split{{"x", -1}, {"<a><b>", 11}, {"y", -1}, {"<b>", 12}}));
  AddedTokens overlapping;
  overlapping.add({"ab", 1});
  overlapping.add({"bcd", 2});
  EXPECT_EQ(split(overlapping, "abcd"), (Split{{"ab", 1}, {"cd", -1}}));
  EXPECT_EQ(split(added, ""), Split{});
}

TEST(AddedTokens, StripAndSingleWordFlags) {
  AddedTokens added;
  AddedToken mask{"<m>", 5};
  mask.lstrip = mask.rstrip = true;
  added.add(mask);
  EXPECT_EQ(split(added, "hi  <m>  x"), (Split{{"hi", -1}, {"  <m>  ", 5}, {"x", -1}}));
  AddedTokens word;
  AddedToken w{"ab", 7};
  w.single_word = true;
  word.add(w);
  EXPECT_EQ(split(word, "xab ab"), (Split{{"xab ", -1}, {"ab", 7}}));
  EXPECT_EQ(split(word, "ab_"), (Split{{"ab_", -1}}));
}

TEST(AddedTokens, NormalizedTokensAreMatchedInTheirOwnPass) {
  AddedTokens added;
  AddedToken raw{"<r>", 1};
  AddedToken norm{"<n>", 2};
  norm.normalized = true;
  added.add(raw);
  added.add(norm);
  EXPECT_EQ(split(added, "<r><n>"), (Split{{"<r>", 1}, {"<n>", -1}}));
  EXPECT_EQ(split(added, "<r><n>", true), (Split{{"<r>", -1}, {"<n>", 2}}));
  EXPECT_EQ(added.find_content("<n>")->id, 2);
  EXPECT_EQ(added.find_id(1)->content, "<r>");
  EXPECT_EQ(added.find_id(3), nullptr);
  EXPECT_EQ(added.id_end(), 3);
}

}  // namespace
}  // namespace zt::models
