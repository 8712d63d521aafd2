// Fuzzes config.json reading (every family: qwen2, qwen3, glm, glm4, chatglm) with arbitrary
// text. zt::Error is the expected rejection; anything else escaping, a sanitizer report, or an
// accepted config the model code could not build from is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "models/config/config.h"

namespace zm = zt::models;
using zt::fuzz::require;

namespace {

// What the model, the memory estimate and the KV cache take for granted.
void check_invariants(const zm::ModelConfig& c) {
  require(c.vocab_size > 0 && c.hidden_size > 0 && c.intermediate_size > 0);
  require(c.num_layers > 0 && c.num_heads > 0 && c.num_kv_heads > 0 && c.head_dim > 0);
  require(c.num_heads % c.num_kv_heads == 0);
  require(c.q_size() > 0 && c.kv_size() > 0);
  require(c.norm_eps > 0.0 && c.rope.base > 1.0);
  require(c.sliding_layers.size() == static_cast<std::size_t>(c.num_layers));
  require(c.sliding_window >= 0);
  if (c.pad_token_id) require(*c.pad_token_id >= 0 && *c.pad_token_id < c.vocab_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const char* source = "config.json";
  const auto config = zt::fuzz::accepted([&] { return zm::parse_config(zm::parse_json_text(text, source), source); });
  if (!config) return 0;
  check_invariants(*config);
  return 0;
}
