// The JSON bitsandbytes packs beside each 4-bit weight, and the companion tensors' checks:
// what transformers writes parses, round-trips through the writer, and every malformed
// variant is refused naming the weight and the key.
#include <gtest/gtest.h>

#include "models/quant/quant_state.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"

namespace zt::models::quant {
namespace {

using testing::error_of;
using testing::expect_mentions;

// As json.dumps writes QuantState.as_dict(packed=True)'s non-tensor items.
constexpr const char* kSaved =
    R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [896, 4864], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.0123291015625})";

TEST(QuantState, ReadsWhatTransformersWrites) {
  const QuantState4 state = parse_quant_state(kSaved, Quant4Type::kNf4, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(state.type, Quant4Type::kNf4);
  EXPECT_EQ(state.blocksize, 64);
  EXPECT_EQ(state.dtype, DType::kBF16);
  EXPECT_EQ(state.shape, (std::vector<std::int64_t>{896, 4864}));
  EXPECT_EQ(state.numel(), 896 * 4864);
  ASSERT_TRUE(state.nested.has_value());
  EXPECT_EQ(state.nested->blocksize, 256);
  EXPECT_EQ(state.nested->offset, 0.0123291015625f);
  EXPECT_EQ(quant_state_json(state), kSaved);
  const QuantState4 plain = parse_quant_state(
      R"({"quant_type": "fp4", "blocksize": 128, "dtype": "float16", "shape": [8, 6]})", Quant4Type::kFp4, "w");
  EXPECT_FALSE(plain.nested.has_value());
  EXPECT_EQ(quant_state_json(plain), R"({"quant_type": "fp4", "blocksize": 128, "dtype": "float16", "shape": [8, 6]})");
  EXPECT_EQ(quant_state_suffix(Quant4Type::kFp4), "quant_state.bitsandbytes__fp4");
}

TEST(QuantState, MalformedStatesAreRefusedByWeightAndKey) {
  const struct {
    const char* json;
    const char* says;
  } cases[] = {
      {"{", "its JSON does not parse"},
      {"[1]", "its JSON is not an object"},
      {R"({"blocksize": 64, "dtype": "bfloat16", "shape": [2, 2]})", "the key 'quant_type' is missing"},
      {R"({"quant_type": "int4", "blocksize": 64, "dtype": "bfloat16", "shape": [2, 2]})", "'int4' is not a 4-bit"},
      {R"({"quant_type": "fp4", "blocksize": 64, "dtype": "bfloat16", "shape": [2, 2]})", "stored under"},
      {R"({"quant_type": "nf4", "blocksize": 48, "dtype": "bfloat16", "shape": [2, 2]})", "'blocksize' 48"},
      {R"({"quant_type": "nf4", "blocksize": "64", "dtype": "bfloat16", "shape": [2, 2]})", "must be an integer"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "int8", "shape": [2, 2]})", "'dtype' is 'int8'"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [0, 2]})", "positive integers"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": []})", "a list of sizes"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [4294967296, 4294967296]})",
       "too many elements"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [2], "nested_offset": 0.5})",
       "come together"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [2], "nested_blocksize": 256,
           "nested_dtype": "float32", "nested_offset": "x"})",
       "'nested_offset' must be a finite"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [2], "nested_blocksize": 0,
           "nested_dtype": "float32", "nested_offset": 1})",
       "'nested_blocksize' must be positive"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [2], "extra": 1})",
       "'extra' is not a key bitsandbytes writes"},
  };
  for (const auto& c : cases)
    expect_mentions(
        error_of([&] { parse_quant_state(c.json, Quant4Type::kNf4, "model.layers.1.self_attn.q_proj.weight"); }),
        {"the quantization state of 'model.layers.1.self_attn.q_proj.weight'", c.says});
}

safetensors::TensorInfo info(DType dtype, std::vector<std::uint64_t> shape) {
  safetensors::TensorInfo result;
  result.dtype = dtype;
  std::uint64_t n = dtype_size(dtype);
  for (auto s : shape) {
    result.shape.push_back(static_cast<std::int64_t>(s));
    n *= s;
  }
  result.data_end = n;
  return result;
}

TEST(QuantState, CompanionTensorsMustMatchTheState) {
  // 130 values: 65 bytes, 3 blocks of 64, one nested block.
  QuantState4 state{.type = Quant4Type::kNf4, .blocksize = 64, .dtype = DType::kBF16, .shape = {10, 13}};
  state.nested = NestedState{};
  StoredLayout good{info(DType::kU8, {65, 1}), info(DType::kU8, {3}), info(DType::kF32, {16}), info(DType::kF32, {1}),
                    info(DType::kF32, {256})};
  check_stored_layout(state, good, "w");
  StoredLayout short_codes = good;
  short_codes.weight = info(DType::kU8, {64, 1});
  expect_mentions(error_of([&] { check_stored_layout(state, short_codes, "w"); }),
                  {"the 4-bit weight 'w'", "hold 64 bytes where 130 4-bit values take 65"});
  StoredLayout float_absmax = good;
  float_absmax.absmax = info(DType::kF32, {3});
  expect_mentions(error_of([&] { check_stored_layout(state, float_absmax, "w"); }),
                  {"'w.absmax' must be uint8 with 3 elements, got float32 with 3"});
  StoredLayout no_map = good;
  no_map.nested_quant_map.reset();
  expect_mentions(error_of([&] { check_stored_layout(state, no_map, "w"); }), {"'w.nested_quant_map' is missing"});
  // bnb_4bit_quant_storage=bfloat16 views the codes' bytes as another dtype: 132 values, 66 bytes.
  QuantState4 even = state;
  even.shape = {12, 11};
  StoredLayout bf16_storage = good;
  bf16_storage.weight = info(DType::kBF16, {33, 1});
  check_stored_layout(even, bf16_storage, "w");
  state.nested.reset();
  StoredLayout plain{info(DType::kU8, {65, 1}), info(DType::kF32, {3}), info(DType::kF32, {16}), {}, {}};
  check_stored_layout(state, plain, "w");
  expect_mentions(error_of([&] { check_stored_layout(state, good, "w"); }), {"'w.absmax' must be float32"});
  plain.nested_absmax = info(DType::kF32, {1});
  expect_mentions(error_of([&] { check_stored_layout(state, plain, "w"); }), {"declares no double quantization"});
}

}  // namespace
}  // namespace zt::models::quant
