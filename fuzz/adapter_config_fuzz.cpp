// Fuzzes adapter_config.json reading (PEFT's LoRA and prefix-tuning adapters) with arbitrary
// text, as --adapter_name_or_path reads it: the kind, then that kind's settings. zt::Error is
// the expected rejection; anything else escaping, a sanitizer report, settings an adapter could
// not be built from, or settings of a kind other than the one the file names is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "models/config/config.h"
#include "models/peft/adapter_config.h"

namespace zm = zt::models;
using zt::fuzz::accepted;
using zt::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const char* source = "adapter_config.json";
  const auto json = accepted([&] { return zm::parse_json_text(text, source); });
  if (!json) return 0;
  const auto kind = accepted([&] { return zm::parse_peft_adapter_kind(*json, source); });
  // Both readers see every file, so each is fuzzed beyond the kind check too.
  if (const auto lora = accepted([&] { return zm::parse_lora_config(*json, source); })) {
    require(kind == zm::PeftAdapterKind::kLora);
    require(lora->rank > 0 && std::isfinite(lora->scale()));
  }
  if (const auto prefix = accepted([&] { return zm::parse_peft_prefix_config(*json, source); })) {
    require(kind == zm::PeftAdapterKind::kPrefix);
    require(prefix->num_virtual_tokens > 0 && prefix->num_layers > 0);
    require(prefix->token_dim > 0 && prefix->num_attention_heads > 0);
  }
  return 0;
}
