// Tokens matched in the text before pre-tokenization (HF's added_tokens: <|im_start|>,
// <think>, [gMASK] ...). Matching is leftmost-longest; lstrip/rstrip absorb the
// whitespace around a match and single_word refuses matches inside a word, as HF does.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace zt::models {

// The largest token id a tokenizer file may give: 2^24 - 1, far above every vocabulary in use
// (Qwen's and GLM-4's have about 152k ids) and small enough that tables indexed by id stay small.
inline constexpr TokenId kMaxTokenId = (1 << 24) - 1;

struct AddedToken {
  std::string content;
  TokenId id = -1;
  bool special = true;  // skipped by decode(skip_special_tokens)
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;  // matched after normalisation rather than on the raw text
};

// A stretch of text, or one matched token (id >= 0, text = what it covered).
struct TextPiece {
  std::string_view text;
  TokenId id = -1;
};

class AddedTokens {
 public:
  // A later token with the same content replaces the earlier one.
  void add(AddedToken token);
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find_id(TokenId id) const;
  const AddedToken* find_content(std::string_view content) const;
  // One past the largest id, or 0.
  TokenId id_end() const;

  // Splits `text` at the tokens whose `normalized` flag equals `normalized`, appending the
  // pieces in order.
  void split(std::string_view text, bool normalized, std::vector<TextPiece>& out) const;

 private:
  struct Matcher {
    std::array<bool, 256> first_byte{};
    std::vector<std::size_t> by_length;  // indices into tokens_, longest first
  };
  void rebuild();
  std::size_t match_at(const Matcher& m, std::string_view text, std::size_t pos) const;

  std::vector<AddedToken> tokens_;
  Matcher raw_, normalized_;
  std::vector<std::int32_t> index_by_id_;  // -1 where no added token has that id
};

}  // namespace zt::models
