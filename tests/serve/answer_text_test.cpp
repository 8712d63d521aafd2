// Stop strings on the text of an answer as its tokens arrive (shipped tiny model's tokenizer):
// what is sent never contains a stop string, even one split over tokens, and all that comes
// before the first one is sent.
#include <gtest/gtest.h>

#include <filesystem>

#include "serve/answer_text.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::serve {
namespace {

const std::string kModel = (std::filesystem::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

// The text sent for `text` encoded and put token by token, and whether a stop ended it.
std::pair<std::string, bool> sent(const models::Tokenizer& tokenizer, const std::string& text,
                                  std::vector<std::string> stops) {
  AnswerText answer(tokenizer, std::move(stops));
  std::string out;
  for (models::TokenId id : tokenizer.encode(text, /*add_special_tokens=*/false)) {
    const std::string piece = answer.put(id);
    out += piece;
  }
  out += answer.finish();
  return {out, answer.stopped()};
}

TEST(AnswerText, CutsBeforeTheFirstStopStringAndHoldsBackPossibleStarts) {
  const std::unique_ptr<models::Tokenizer> tokenizer = models::load_tokenizer(kModel);
  const std::string text = "one two three four";
  EXPECT_EQ(sent(*tokenizer, text, {}), std::make_pair(text, false));
  EXPECT_EQ(sent(*tokenizer, text, {"three"}), std::make_pair(std::string("one two "), true));
  EXPECT_EQ(sent(*tokenizer, text, {"four", "o t"}), std::make_pair(std::string("one tw"), true));
  EXPECT_EQ(sent(*tokenizer, text, {"fourteen"}), std::make_pair(text, false))
      << "a held-back start is sent at the end";

  // Piece by piece: "thr" may begin "three" and is held until it is known.
  AnswerText answer(*tokenizer, {"three"});
  std::string so_far;
  for (models::TokenId id : tokenizer->encode(text, false)) {
    so_far += answer.put(id);
    EXPECT_EQ(so_far.find("thr"), std::string::npos) << so_far;
  }
  EXPECT_EQ(so_far, "one two ");
}

// An id past the tokenizer's tokens (a padded embedding row the model chose) adds no text and
// does not end or break the answer: the server's decoding of every generated token.
TEST(AnswerText, AnIdPastTheTokenizerAddsNoText) {
  const std::unique_ptr<models::Tokenizer> tokenizer = models::load_tokenizer(kModel);
  const auto padding = static_cast<models::TokenId>(tokenizer->vocab_size());
  AnswerText answer(*tokenizer, {"three"});
  std::string out;
  for (models::TokenId id : tokenizer->encode("one two three", false)) {
    out += answer.put(padding);
    out += answer.put(padding + 97);
    out += answer.put(id);
  }
  out += answer.finish();
  EXPECT_EQ(out, "one two ");
  EXPECT_TRUE(answer.stopped());
}

}  // namespace
}  // namespace zt::serve
