// Fuzzes generation_config.json reading with arbitrary text. zt::Error is the expected
// rejection; anything else escaping, a sanitizer report, or accepted options that the
// generation code's own check refuses is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "models/config/config.h"
#include "models/generation/generate_options.h"

namespace zm = zt::models;
using zt::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const char* source = "generation_config.json";
  const auto options = zt::fuzz::accepted(
      [&] { return zm::parse_generation_config(zm::parse_json_text(text, source), source, {151643}); });
  if (!options) return 0;
  require(zt::fuzz::accepted([&] { return (zm::check_generation_options(*options), true); }).has_value());
  require(options->max_new_tokens >= options->min_new_tokens && options->min_new_tokens >= 0);
  return 0;
}
