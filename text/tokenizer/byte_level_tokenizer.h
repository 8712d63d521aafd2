// Byte-level BPE, the tokenizer of Qwen and GLM-4: added tokens are matched first, the rest
// is NFC-normalised (when the file asks for it), cut by the pre-tokenizer regex, and each
// piece's bytes are merged by rank. Built by the tokenizer.json, vocab.json + merges.txt and
// tiktoken loaders (tokenizer_loaders.h).
#pragma once

#include <memory>

#include "text/tokenizer/added_tokens.h"
#include "text/tokenizer/bpe.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_regex.h"

namespace zt::models {

struct ByteLevelBpeOptions {
  std::string pattern;            // the pre-tokenizer regex, in Oniguruma syntax
  bool nfc = false;               // NFC-normalise text outside added tokens
  bool add_prefix_space = false;  // prepend a space to text that does not start with one
  std::vector<TokenId> prefix;    // added by encode(add_special_tokens = true) ...
  std::vector<TokenId> suffix;    // ... before and after the text
  std::string format;             // what Tokenizer::format() reports
};

// The vocabulary of a byte-level tokenizer: for each id, its spelling in the byte-level
// alphabet (what id_to_token returns) and the bytes it decodes to. Empty strings mark ids
// the vocabulary does not use.
struct ByteLevelVocab {
  std::vector<std::string> spellings;
  std::vector<std::string> bytes;
};

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  ByteLevelBpeTokenizer(ByteLevelVocab vocab, std::unique_ptr<BytePairEncoder> bpe, AddedTokens added,
                        ByteLevelBpeOptions options, std::string source);

  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const override;
  void append_token_bytes(TokenId id, bool skip_special_tokens, DecodeState& state, std::string& out) const override;
  std::optional<TokenId> token_to_id(std::string_view token) const override;
  std::string id_to_token(TokenId id) const override;
  std::int64_t vocab_size() const override { return vocab_size_; }
  bool is_special(TokenId id) const override;
  std::string_view format() const override { return options_.format; }

 private:
  void encode_normalized(std::string_view text, std::vector<TokenId>& out) const;
  void encode_plain(std::string_view text, std::vector<TokenId>& out) const;

  ByteLevelVocab vocab_;
  StringMap<TokenId> ids_by_spelling_;
  std::unique_ptr<BytePairEncoder> bpe_;
  AddedTokens added_;
  ByteLevelBpeOptions options_;
  std::unique_ptr<PretokenizerRegex> regex_;
  std::int64_t vocab_size_ = 0;
};

}  // namespace zt::models
