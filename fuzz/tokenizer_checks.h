// What the tokenizer targets check on a tokenizer a fuzzed file produced: encoding text that
// reaches every branch (and the file's own text) gives ids inside the vocabulary, special ids
// are inside it too, and decoding never fails. Plus a tiny tiktoken vocabulary, for targets that
// fuzz a file read beside the tokenizer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::fuzz {

// ASCII words and contractions, digits, whitespace runs (with U+0085 and U+3000), a combining
// accent NFC composes, CJK, an emoji, and markup shaped like special tokens.
inline constexpr std::string_view kSampleText =
    "Hello, world! It's 2024: 12345 apples\n\n\t  x\u0085y\u3000z cafe\u0301 caf\u00e9 \u4f60\u597d "
    "\U0001F600 <|im_start|>user\n<|im_end|> [gMASK]<sop><|user|>";

inline void check_id(const models::Tokenizer& tokenizer, models::TokenId id) {
  require(id >= 0 && id < tokenizer.vocab_size());
}

// The ids of `text` without special tokens, or nothing when the tokenizer refuses the text
// with zt::Error (invalid UTF-8, a byte the vocabulary lacks).
inline std::optional<std::vector<models::TokenId>> check_encoding(const models::Tokenizer& tokenizer,
                                                                  std::string_view text) {
  std::optional<std::vector<models::TokenId>> plain;
  for (bool add_special_tokens : {true, false}) {
    auto ids = accepted([&] { return tokenizer.encode(text, add_special_tokens); });
    if (!ids) return std::nullopt;
    for (models::TokenId id : *ids) {
      check_id(tokenizer, id);
      tokenizer.id_to_token(id);
    }
    tokenizer.decode(*ids, /*skip_special_tokens=*/true);
    plain = std::move(ids);
  }
  return plain;
}

inline void check_tokenizer(const models::Tokenizer& tokenizer, std::string_view file_text) {
  const models::SpecialTokenIds& special = tokenizer.special_ids();
  for (const auto& id : {special.bos, special.eos, special.pad})
    if (id) check_id(tokenizer, *id);
  check_encoding(tokenizer, kSampleText);
  check_encoding(tokenizer, file_text);
}

inline std::string base64(std::string_view bytes) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 3; ++j)
      group = group << 8 | (i + j < bytes.size() ? static_cast<std::uint8_t>(bytes[i + j]) : 0u);
    const std::size_t digits = std::min<std::size_t>(bytes.size() - i, 3) + 1;
    for (std::size_t j = 0; j < 4; ++j) out += j < digits ? kDigits[(group >> (18 - 6 * j)) & 63] : '=';
  }
  return out;
}

// A tiktoken file: ranks 0..255 the single bytes, then a few merged tokens.
inline std::string tiny_tiktoken_text() {
  std::string text;
  int rank = 0;
  for (int byte = 0; byte < 256; ++byte)
    text += base64(std::string(1, static_cast<char>(byte))) + " " + std::to_string(rank++) + "\n";
  for (std::string_view token : {"ab", "bc", "abc", "12", "He", "ll", "llo", "Hello", "<|", "|>"})
    text += base64(token) + " " + std::to_string(rank++) + "\n";
  return text;
}

}  // namespace zt::fuzz
