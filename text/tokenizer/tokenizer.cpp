#include "text/tokenizer/tokenizer.h"

#include "runtime/error.h"
#include "text/tokenizer/tokenizer_utf8.h"

namespace zt::models {

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::string bytes;
  DecodeState state;
  for (TokenId id : ids)
    if (id < vocab_size()) append_token_bytes(id, skip_special_tokens, state, bytes);  // a negative id throws
  return utf8::to_valid_lossy(bytes);
}

void Tokenizer::require_valid_id(TokenId id) const {
  if (!has_token(id))
    zt::fail("token id " + std::to_string(id) + " is out of range [0, " + std::to_string(vocab_size()) +
             ") for the tokenizer read from " + source_);
}

bool tokenizers_available() {
#if ZT_HAVE_TEXT
  return true;
#else
  return false;
#endif
}

const char* tokenizer_support_message() {
  return "zerotune was built without tokenizer support: install libpcre2-dev libutf8proc-dev "
         "libsentencepiece-dev and rebuild";
}

}  // namespace zt::models
