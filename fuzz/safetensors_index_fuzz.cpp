// Fuzzes the sharded-checkpoint index parser (model.safetensors.index.json) with arbitrary
// text. zt::Error is the expected rejection; anything else is a finding, as is an accepted
// index that does not survive writing and reading back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "tensor/safetensors/safetensors_format.h"

namespace st = zt::safetensors;
using zt::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const auto index = zt::fuzz::accepted([&] { return st::parse_index(text, "fuzz"); });
  if (!index) return 0;
  for (const auto& [name, shard] : index->weight_map) require(!shard.empty() && shard.find('/') == std::string::npos);
  st::ShardIndex again = st::parse_index(st::serialize_index(*index), "fuzz");
  require(again.weight_map == index->weight_map && again.total_size == index->total_size);
  return 0;
}
