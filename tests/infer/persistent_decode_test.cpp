// The host side of the persistent decode kernel (infer/persistent_decode.h), checked on the CPU:
// which models and caches it takes (the reason comes back by name for each thing the kernel
// leaves out, and a model it would take is refused only for not being on a GPU), and the layer
// table it hands the kernel (fused weights and biases sliced at the right rows).
#include <gtest/gtest.h>

#include "infer/persistent_decode.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"

namespace zt::infer {
namespace {

std::string reason_for(const char* arch, DType dtype, DType cache_dtype) {
  models::CausalLM model = models::load_model(testing::fixture_dir(arch), {Device::cpu(), dtype});
  PagedKvCache cache(model.config(), 4, 16, cache_dtype, model.device());
  return PersistentDecode::unsupported(model, cache);
}

std::string reason_for(const char* arch, DType dtype) { return reason_for(arch, dtype, dtype); }

TEST(PersistentDecode, SaysWhyAModelCannotTakeIt) {
  EXPECT_EQ(reason_for("glm4", DType::kBF16), "post-attention and post-MLP norms (glm4) are not in the kernel");
  EXPECT_EQ(reason_for("qwen2", DType::kF32), "the weights are not bfloat16 or float16");
  EXPECT_EQ(reason_for("qwen2", DType::kBF16, DType::kF16), "the KV cache's dtype is not the weights'");
  for (const char* arch : {"qwen2", "qwen3", "glm", "chatglm"})
    EXPECT_EQ(reason_for(arch, DType::kBF16), "the model is not on a GPU");
}

const char* at(const void* p) { return static_cast<const char*>(p); }
const char* start_of(const models::CausalLM& model, const std::string& name) {
  return at(model.parameter(name).data().data_ptr());
}

// The kernel's layer table on a ChatGLM model: the fused query_key_value weight and bias, and
// dense_h_to_4h, sliced at q_size, q_size + kv_size and the intermediate size, rows of hidden
// elements (2 bytes each in bfloat16); the pools are the layer's own.
TEST(PersistentDecode, LayerTableSlicesFusedWeights) {
  models::CausalLM model = models::load_model(testing::fixture_dir("chatglm"), {Device::cpu(), DType::kBF16});
  PagedKvCache cache(model.config(), 4, 16, model.dtype(), model.device());
  const models::ModelConfig& c = model.config();
  const std::vector<cuda::DecodeLayerPointers> table = decode_layer_pointers(model, cache);
  ASSERT_EQ(static_cast<std::int64_t>(table.size()), c.num_layers);
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer) {
    const cuda::DecodeLayerPointers& l = table[static_cast<std::size_t>(layer)];
    const std::string p = "transformer.encoder.layers." + std::to_string(layer) + ".";
    const char* qkv = start_of(model, p + "self_attention.query_key_value.weight");
    const char* bias = start_of(model, p + "self_attention.query_key_value.bias");
    EXPECT_EQ(at(l.q), qkv);
    EXPECT_EQ(at(l.k), qkv + c.q_size() * c.hidden_size * 2);
    EXPECT_EQ(at(l.v), qkv + (c.q_size() + c.kv_size()) * c.hidden_size * 2);
    EXPECT_EQ(at(l.q_bias), bias);
    EXPECT_EQ(at(l.k_bias), bias + c.q_size() * 2);
    EXPECT_EQ(at(l.v_bias), bias + (c.q_size() + c.kv_size()) * 2);
    const char* gate_up = start_of(model, p + "mlp.dense_h_to_4h.weight");
    EXPECT_EQ(at(l.gate), gate_up);
    EXPECT_EQ(at(l.up), gate_up + c.intermediate_size * c.hidden_size * 2);
    EXPECT_EQ(l.gate_bias, nullptr);
    EXPECT_EQ(at(l.down), start_of(model, p + "mlp.dense_4h_to_h.weight"));
    EXPECT_EQ(at(l.input_norm), start_of(model, p + "input_layernorm.weight"));
    EXPECT_EQ(at(l.post_norm), start_of(model, p + "post_attention_layernorm.weight"));
    EXPECT_EQ(l.key_pool, cache.key_pool(layer).data_ptr());
    EXPECT_EQ(l.value_pool, cache.value_pool(layer).data_ptr());
  }
}

// Qwen2's separate projections go in as they are, with their biases, and no output bias.
TEST(PersistentDecode, LayerTableTakesSeparateProjections) {
  models::CausalLM model = models::load_model(testing::fixture_dir("qwen2"), {Device::cpu(), DType::kBF16});
  PagedKvCache cache(model.config(), 4, 16, model.dtype(), model.device());
  const cuda::DecodeLayerPointers l = decode_layer_pointers(model, cache).at(1);
  const std::string p = "model.layers.1.";
  EXPECT_EQ(at(l.q), start_of(model, p + "self_attn.q_proj.weight"));
  EXPECT_EQ(at(l.k), start_of(model, p + "self_attn.k_proj.weight"));
  EXPECT_EQ(at(l.v), start_of(model, p + "self_attn.v_proj.weight"));
  EXPECT_EQ(at(l.v_bias), start_of(model, p + "self_attn.v_proj.bias"));
  EXPECT_EQ(l.o_bias, nullptr);
  EXPECT_EQ(at(l.gate), start_of(model, p + "mlp.gate_proj.weight"));
  EXPECT_EQ(at(l.up), start_of(model, p + "mlp.up_proj.weight"));
  EXPECT_EQ(at(l.down), start_of(model, p + "mlp.down_proj.weight"));
  EXPECT_EQ(l.q_norm, nullptr);
  EXPECT_EQ(l.k_norm, nullptr);
}

// Qwen3's per-head q/k norm weights go in beside the projections.
TEST(PersistentDecode, LayerTableTakesQwen3HeadNorms) {
  models::CausalLM model = models::load_model(testing::fixture_dir("qwen3"), {Device::cpu(), DType::kBF16});
  PagedKvCache cache(model.config(), 4, 16, model.dtype(), model.device());
  const cuda::DecodeLayerPointers l = decode_layer_pointers(model, cache).at(0);
  EXPECT_EQ(at(l.q_norm), start_of(model, "model.layers.0.self_attn.q_norm.weight"));
  EXPECT_EQ(at(l.k_norm), start_of(model, "model.layers.0.self_attn.k_norm.weight"));
  EXPECT_EQ(l.q_bias, nullptr);
}

}  // namespace
}  // namespace zt::infer
