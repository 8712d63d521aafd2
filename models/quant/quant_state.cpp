#include "models/quant/quant_state.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "ops/quant4/blockwise.h"
#include "runtime/error.h"

namespace zt::models::quant {
namespace {

using Json = nlohmann::ordered_json;

// bitsandbytes' QuantState.valid_qs_keys less the tensors, which are never in the JSON.
constexpr const char* kKeys[] = {"quant_type",       "blocksize",    "dtype",        "shape",
                                 "nested_blocksize", "nested_dtype", "nested_offset"};

class StateKeys {
 public:
  StateKeys(const Json& json, const std::string& where) : json_(json), where_(where) {}

  [[noreturn]] void fail(const std::string& message) const {
    zt::fail("the quantization state of '" + where_ + "': " + message +
             "; the checkpoint is not in bitsandbytes' 4-bit layout (re-save it with transformers' "
             "save_pretrained, or load the unquantized model)");
  }
  const Json& at(const char* key) const {
    const auto found = json_.find(key);
    if (found == json_.end()) fail(std::string("the key '") + key + "' is missing");
    return *found;
  }
  std::string text(const char* key) const {
    const Json& v = at(key);
    if (!v.is_string()) fail(std::string("'") + key + "' must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  std::int64_t integer(const char* key) const {
    const Json& v = at(key);
    if (!v.is_number_integer()) fail(std::string("'") + key + "' must be an integer, got " + v.dump());
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxCount))
      fail(std::string("'") + key + "' is too large: " + v.dump());
    return v.get<std::int64_t>();
  }
  DType float_dtype(const char* key) const {
    const std::string name = text(key);
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
      if (name == dtype_name(dtype)) return dtype;
    fail(std::string("'") + key + "' is '" + name + "'; bitsandbytes stores float32, bfloat16 or float16");
  }

  static constexpr std::int64_t kMaxCount = std::int64_t{1} << 62;

 private:
  const Json& json_;
  const std::string& where_;
};

std::vector<std::int64_t> shape_of(const StateKeys& keys, const Json& value) {
  if (!value.is_array() || value.empty()) keys.fail("'shape' must be a list of sizes, got " + value.dump());
  std::vector<std::int64_t> shape;
  std::int64_t numel = 1;
  for (const Json& size : value) {
    if (!size.is_number_integer() || size.get<std::int64_t>() <= 0 ||
        (size.is_number_unsigned() && size.get<std::uint64_t>() > static_cast<std::uint64_t>(StateKeys::kMaxCount)))
      keys.fail("'shape' must hold positive integers, got " + value.dump());
    const std::int64_t dim = size.get<std::int64_t>();
    if (numel > StateKeys::kMaxCount / dim) keys.fail("'shape' " + value.dump() + " has too many elements");
    numel *= dim;
    shape.push_back(dim);
  }
  return shape;
}

std::optional<NestedState> nested_of(const StateKeys& keys, const Json& json) {
  const int present = static_cast<int>(json.contains("nested_blocksize")) +
                      static_cast<int>(json.contains("nested_dtype")) +
                      static_cast<int>(json.contains("nested_offset"));
  if (present == 0) return std::nullopt;
  if (present != 3) keys.fail("'nested_blocksize', 'nested_dtype' and 'nested_offset' come together or not at all");
  NestedState nested;
  nested.blocksize = keys.integer("nested_blocksize");
  if (nested.blocksize <= 0) keys.fail("'nested_blocksize' must be positive, got " + std::to_string(nested.blocksize));
  if (keys.float_dtype("nested_dtype") != DType::kF32)
    keys.fail("'nested_dtype' must be float32 (double quantization keeps fp32 scales)");
  const Json& offset = keys.at("nested_offset");
  if (!offset.is_number() || !std::isfinite(offset.get<double>()) ||
      std::fabs(offset.get<double>()) > std::numeric_limits<float>::max())
    keys.fail("'nested_offset' must be a finite float32 number, got " + offset.dump());
  nested.offset = static_cast<float>(offset.get<double>());
  return nested;
}

}  // namespace

std::string quant_state_suffix(Quant4Type type) {
  return std::string("quant_state.bitsandbytes__") + ops::quant4::quant4_type_name(type);
}

std::int64_t QuantState4::numel() const {
  std::int64_t n = 1;
  for (std::int64_t size : shape) n *= size;
  return n;
}

QuantState4 parse_quant_state(std::string_view json_text, Quant4Type key_type, const std::string& where) {
  const Json json = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  const StateKeys keys(json, where);
  if (json.is_discarded()) keys.fail("its JSON does not parse");
  if (!json.is_object()) keys.fail("its JSON is not an object");
  for (const auto& [key, value] : json.items()) {
    bool known = false;
    for (const char* name : kKeys) known = known || key == name;
    if (!known) keys.fail("'" + key + "' is not a key bitsandbytes writes");
  }
  QuantState4 state;
  state.type = ops::quant4::parse_quant4_type(keys.text("quant_type"), "the quantization state of '" + where + "'");
  if (state.type != key_type)
    keys.fail(std::string("its quant_type is '") + ops::quant4::quant4_type_name(state.type) +
              "' but it is stored under '" + quant_state_suffix(key_type) + "'");
  state.blocksize = keys.integer("blocksize");
  if (!ops::quant4::valid_4bit_blocksize(state.blocksize))
    keys.fail("'blocksize' " + std::to_string(state.blocksize) + " is not one of 32, 64, 128, ..., 4096");
  state.dtype = keys.float_dtype("dtype");
  state.shape = shape_of(keys, keys.at("shape"));
  state.nested = nested_of(keys, json);
  return state;
}

void check_stored_layout(const QuantState4& state, const StoredLayout& stored, const std::string& where) {
  auto fail_layout = [&](const std::string& message) {
    zt::fail("the 4-bit weight '" + where + "': " + message +
             "; the checkpoint is not in bitsandbytes' 4-bit layout (re-save it with transformers' save_pretrained, or "
             "load the unquantized model)");
  };
  auto numel_of = [](const safetensors::TensorInfo& info) {
    std::int64_t n = 1;
    for (auto size : info.shape) n *= static_cast<std::int64_t>(size);
    return n;
  };
  auto require = [&](const std::optional<safetensors::TensorInfo>& info, const std::string& suffix, DType dtype,
                     std::int64_t count) {
    const std::string name = where + suffix;
    if (!info) fail_layout("'" + name + "' is missing");
    if (info->dtype != dtype || numel_of(*info) != count)
      fail_layout("'" + name + "' must be " + dtype_name(dtype) + " with " + std::to_string(count) + " elements, got " +
                  dtype_name(info->dtype) + " with " + std::to_string(numel_of(*info)));
  };
  const std::int64_t blocks = ops::quant4::block_count(state.numel(), state.blocksize);
  if (!stored.weight) fail_layout("its packed codes are missing");
  const std::uint64_t bytes = static_cast<std::uint64_t>((state.numel() + 1) / 2);
  if (stored.weight->nbytes() != bytes)
    fail_layout("its packed codes hold " + std::to_string(stored.weight->nbytes()) + " bytes where " +
                std::to_string(state.numel()) + " 4-bit values take " + std::to_string(bytes));
  require(stored.absmax, ".absmax", state.nested ? DType::kU8 : DType::kF32, blocks);
  require(stored.quant_map, ".quant_map", DType::kF32, 16);
  if (state.nested) {
    require(stored.nested_absmax, ".nested_absmax", DType::kF32,
            ops::quant4::block_count(blocks, state.nested->blocksize));
    require(stored.nested_quant_map, ".nested_quant_map", DType::kF32, 256);
  } else if (stored.nested_absmax || stored.nested_quant_map) {
    fail_layout("it has nested_absmax or nested_quant_map but its state declares no double quantization");
  }
}

std::string quant_state_json(const QuantState4& state) {
  // Appended piece by piece: json.dumps' ", " and ": " separators, keys in bitsandbytes' order.
  std::string text = "{\"quant_type\": \"";
  text.append(ops::quant4::quant4_type_name(state.type)).append("\", \"blocksize\": ");
  text.append(std::to_string(state.blocksize)).append(", \"dtype\": \"").append(dtype_name(state.dtype));
  text.append("\", \"shape\": [");
  for (std::size_t i = 0; i < state.shape.size(); ++i)
    text.append(i == 0 ? "" : ", ").append(std::to_string(state.shape[i]));
  text.append("]");
  if (state.nested) {
    text.append(", \"nested_blocksize\": ").append(std::to_string(state.nested->blocksize));
    text.append(", \"nested_dtype\": \"float32\", \"nested_offset\": ");
    text.append(Json(static_cast<double>(state.nested->offset)).dump());
  }
  return text.append("}");
}

}  // namespace zt::models::quant
