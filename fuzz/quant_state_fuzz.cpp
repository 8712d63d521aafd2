// Fuzzes the quantization state bitsandbytes packs beside each 4-bit weight
// (<w>.quant_state.bitsandbytes__nf4: JSON) as a 4-bit checkpoint's loader reads it, then the
// companion tensors' checks against what the state implies. zt::Error is the expected
// rejection; anything else escaping, a sanitizer report, or an accepted state that its own
// writer does not reproduce, or whose own layout is refused, is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "models/quant/quant_state.h"
#include "ops/quant4/blockwise.h"

namespace zq = zt::models::quant;
using zt::fuzz::accepted;
using zt::fuzz::require;

namespace {

zt::safetensors::TensorInfo info(zt::DType dtype, std::int64_t count) {
  zt::safetensors::TensorInfo result;
  result.dtype = dtype;
  result.shape = {count};
  result.data_end = static_cast<std::uint64_t>(count) * zt::dtype_size(dtype);
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const auto state = accepted([&] { return zq::parse_quant_state(text, zq::Quant4Type::kNf4, "w"); });
  if (!state) return 0;
  require(zt::ops::quant4::valid_4bit_blocksize(state->blocksize) && state->numel() > 0);
  const auto again = accepted([&] { return zq::parse_quant_state(zq::quant_state_json(*state), state->type, "w"); });
  require(again && again->shape == state->shape && again->blocksize == state->blocksize &&
          again->dtype == state->dtype && again->nested.has_value() == state->nested.has_value());
  const std::int64_t blocks = zt::ops::quant4::block_count(state->numel(), state->blocksize);
  zq::StoredLayout layout{info(zt::DType::kU8, (state->numel() + 1) / 2),
                          info(state->nested ? zt::DType::kU8 : zt::DType::kF32, blocks),
                          info(zt::DType::kF32, 16),
                          {},
                          {}};
  if (state->nested) {
    layout.nested_absmax = info(zt::DType::kF32, zt::ops::quant4::block_count(blocks, state->nested->blocksize));
    layout.nested_quant_map = info(zt::DType::kF32, 256);
  }
  require(accepted([&] {
            zq::check_stored_layout(*state, layout, "w");
            return true;
          }).has_value());
  // One byte short is always refused.
  layout.weight = info(zt::DType::kU8, (state->numel() + 1) / 2 - 1);
  require(!accepted([&] {
             zq::check_stored_layout(*state, layout, "w");
             return true;
           }).has_value());
  return 0;
}
