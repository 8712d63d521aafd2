#include "text/stream_decoder.h"

#include "text/tokenizer/tokenizer_utf8.h"

namespace zt::models {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string StreamDecoder::put(TokenId id) {
  // An id past the tokenizer's tokens (a padded embedding row) gives no text, as in decode.
  if (id < tokenizer_.vocab_size()) tokenizer_.append_token_bytes(id, skip_special_tokens_, state_, pending_);
  const std::size_t ready = pending_.size() - utf8::incomplete_tail(pending_);
  std::string text = utf8::to_valid_lossy(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return text;
}

std::string StreamDecoder::finish() {
  std::string text = utf8::to_valid_lossy(pending_);
  pending_.clear();
  state_ = DecodeState{};
  return text;
}

}  // namespace zt::models
