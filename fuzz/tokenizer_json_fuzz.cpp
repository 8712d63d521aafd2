// Fuzzes the HF tokenizer.json loader (byte-level BPE: normalizer, pre-tokenizer regex,
// decoder, post-processor, vocabulary, merges, added tokens) with arbitrary text, then encodes
// and decodes with what it accepted. zt::Error is the expected rejection; anything else
// escaping, a sanitizer report, a hang in the regex or the merges, or an id outside the
// vocabulary is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/tokenizer_checks.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zm = zt::models;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const auto tokenizer =
      zt::fuzz::accepted([&] { return zm::parse_tokenizer_json(text, "tokenizer.json", zm::TokenizerConfig{}); });
  if (tokenizer) zt::fuzz::check_tokenizer(**tokenizer, text);
  return 0;
}
