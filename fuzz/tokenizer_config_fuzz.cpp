// Fuzzes tokenizer_config.json reading (bos/eos/pad, added_tokens_decoder, tokenizer_class,
// chat_template) with arbitrary text, then builds a tiny tiktoken tokenizer with what it
// accepted, as load_tokenizer does, and encodes text holding every added token. zt::Error is
// the expected rejection; anything else escaping, a sanitizer report, or an id outside the
// vocabulary is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/tokenizer_checks.h"
#include "text/tokenizer/tokenizer_config.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zm = zt::models;
using zt::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string vocabulary = zt::fuzz::tiny_tiktoken_text();
  const std::string_view text = zt::fuzz::as_text(data, size);
  const auto config = zt::fuzz::accepted([&] { return zm::parse_tokenizer_config(text, "tokenizer_config.json"); });
  if (!config) return 0;
  for (const zm::AddedToken& token : config->added_tokens) require(token.id >= 0);
  const auto tokenizer = zt::fuzz::accepted([&] { return zm::parse_tiktoken(vocabulary, "tokenizer.model", *config); });
  if (!tokenizer) return 0;
  std::string with_added = "ab";
  for (const zm::AddedToken& token : config->added_tokens) with_added += token.content + " x";
  zt::fuzz::check_tokenizer(**tokenizer, with_added);
  return 0;
}
