// Decoding while generating: ids arrive one at a time and each call returns the text that is
// complete so far. Bytes of a character split across tokens are held until the character
// completes (or turns out ill-formed, then it becomes U+FFFD), so the pieces concatenate to
// exactly what Tokenizer::decode returns for all the ids.
#pragma once

#include <string>

#include "text/tokenizer/tokenizer.h"

namespace zt::models {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  // The new complete text after `id` (possibly empty; always for an id past the tokenizer's
  // vocab_size(), which has no token, as in Tokenizer::decode).
  std::string put(TokenId id);
  // What is still held, as U+FFFD for an unfinished character; the decoder starts over.
  std::string finish();
  // Bytes waiting for the rest of their character.
  std::size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  DecodeState state_;
  std::string pending_;
};

}  // namespace zt::models
