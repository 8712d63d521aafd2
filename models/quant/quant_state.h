// The quantization state bitsandbytes stores beside each 4-bit weight in a safetensors
// checkpoint (QuantState.as_dict(packed=True), as transformers saves a load_in_4bit model):
//   <w>                                   uint8 [(n + 1) / 2, 1]: the packed codes (or the same
//                                         bytes viewed as bnb_4bit_quant_storage)
//   <w>.absmax                            float32 [blocks], or uint8 [blocks] when nested
//   <w>.quant_map                         float32 [16]: the code book
//   <w>.nested_absmax                     float32 [ceil(blocks / 256)]   (double quantization)
//   <w>.nested_quant_map                  float32 [256]: the dynamic map (double quantization)
//   <w>.quant_state.bitsandbytes__<type>  uint8: UTF-8 JSON of the rest, e.g.
//     {"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [896, 896],
//      "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.0123}
// This file reads and writes that JSON; quantized_weight.h the tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/quant4/code_books.h"
#include "runtime/dtype.h"
#include "tensor/safetensors/safetensors_format.h"

namespace zt::models::quant {

using ops::quant4::Quant4Type;

// "quant_state.bitsandbytes__nf4": the suffix of the JSON tensor's name.
std::string quant_state_suffix(Quant4Type type);

struct NestedState {
  std::int64_t blocksize = 256;
  float offset = 0.0f;  // the mean of the absmax, added back after dequantizing them
};

struct QuantState4 {
  Quant4Type type = Quant4Type::kNf4;
  std::int64_t blocksize = 64;
  DType dtype = DType::kBF16;           // what the weight was quantized from and dequantizes to
  std::vector<std::int64_t> shape{};    // the weight's shape: [out_features, in_features]
  std::optional<NestedState> nested{};  // double quantization of the absmax

  std::int64_t numel() const;
};

// Parses the JSON of `<w>.quant_state.bitsandbytes__<type>`; `key_type` is the type its name
// ends with, which the JSON's quant_type must repeat. Throws zt::Error naming `where` (the
// tensor) and the key for malformed JSON, a missing or mistyped key, a key bitsandbytes does
// not write, a blocksize bitsandbytes does not use, a dtype that is not a float, or a shape
// with no elements or more than 2^62.
QuantState4 parse_quant_state(std::string_view json, Quant4Type key_type, const std::string& where);

// The companion tensors of one weight as a checkpoint's header lists them (absent: nullopt).
struct StoredLayout {
  std::optional<safetensors::TensorInfo> weight, absmax, quant_map, nested_absmax, nested_quant_map;
};

// Throws zt::Error naming `where` and the tensor unless each is present with the dtype and size
// the state implies: (n + 1) / 2 bytes of codes in any storage dtype; one absmax per block
// (float32, or uint8 codes when nested); a float32 code book of 16; when nested, one float32
// per nested block and a float32 map of 256, and neither when not.
void check_stored_layout(const QuantState4& state, const StoredLayout& stored, const std::string& where);

// The JSON as bitsandbytes writes it (json.dumps of its keys in its order).
std::string quant_state_json(const QuantState4& state);

}  // namespace zt::models::quant
