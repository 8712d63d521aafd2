// Fuzzes the tiktoken-format tokenizer.model loader (GLM-4's: "<base64 bytes> <rank>" lines)
// with arbitrary bytes, then encodes and decodes with what it accepted. zt::Error is the
// expected rejection; anything else escaping, a sanitizer report, an id outside the
// vocabulary, or text that does not decode back to itself is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/tokenizer_checks.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zm = zt::models;
using zt::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const bool looks_right = zm::looks_like_tiktoken(text);
  const auto tokenizer =
      zt::fuzz::accepted([&] { return zm::parse_tiktoken(text, "tokenizer.model", zm::TokenizerConfig{}); });
  if (!tokenizer) return 0;
  // A file the loader accepts is one load_tokenizer would have recognised as tiktoken.
  require(looks_right);
  zt::fuzz::check_tokenizer(**tokenizer, text);
  // No normalisation and no prefix space: the ids of any text decode to that text.
  if (const auto ids = zt::fuzz::check_encoding(**tokenizer, zt::fuzz::kSampleText))
    require((*tokenizer)->decode(*ids) == zt::fuzz::kSampleText);
  return 0;
}
