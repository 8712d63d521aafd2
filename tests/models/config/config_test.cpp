// config.json as transformers 4.x and 5.x and THUDM's remote code write it, with the values
// of the real models' files (REFERENCE.md "Model and tokenizer facts"), and every refusal.
#include <gtest/gtest.h>

#include "models/config/config.h"
#include "models/config/config_presets.h"
#include "models/weights/hf_names.h"
#include "tests/common/op_test_util.h"
#include "tests/common/safetensors_test_util.h"

namespace zt::models {
namespace {

using testing::error_of;
using testing::expect_mentions;

ModelConfig parse(const char* text) { return parse_config(nlohmann::ordered_json::parse(text), "test config.json"); }

// Qwen2.5-0.5B's config.json as transformers 4.x writes it.
TEST(ModelConfig, Qwen25In4xSpelling) {
  ModelConfig c = parse(R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
    "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
    "vocab_size": 151936, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "rope_scaling": null,
    "tie_word_embeddings": true, "use_sliding_window": false, "sliding_window": 32768, "max_window_layers": 21,
    "torch_dtype": "bfloat16", "eos_token_id": 151643, "bos_token_id": 151643, "hidden_act": "silu"})");
  EXPECT_EQ(c.arch, Architecture::kQwen2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_DOUBLE_EQ(c.rope.base, 1e6);
  EXPECT_EQ(c.rope.style, ops::RopeStyle::kRotateHalf);
  EXPECT_DOUBLE_EQ(c.rope.rotary_fraction, 1.0);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-6);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.eos_token_ids, std::vector<std::int64_t>{151643});
  for (bool sliding : c.sliding_layers) EXPECT_FALSE(sliding);
  EXPECT_FALSE(parameter_layout(c).lm_head.has_value());
}

// Qwen3 as transformers 5.x writes it: rope_theta inside rope_parameters, dtype not torch_dtype.
TEST(ModelConfig, Qwen3In5xSpelling) {
  ModelConfig c = parse(R"({"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 151936, "rms_norm_eps": 1e-06, "tie_word_embeddings": true, "dtype": "bfloat16",
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}})");
  EXPECT_EQ(c.arch, Architecture::kQwen3);
  EXPECT_EQ(c.q_size(), 2048);
  EXPECT_DOUBLE_EQ(c.rope.base, 1e6);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  auto layer = parameter_layout(c).layers.at(3);
  EXPECT_EQ(layer[kQNorm]->name, "model.layers.3.self_attn.q_norm.weight");
  EXPECT_EQ(layer[kQNorm]->shape, Shape({128}));
  EXPECT_EQ(layer[kO]->shape, Shape({1024, 2048}));
  EXPECT_FALSE(layer[kQBias].has_value());
}

TEST(ModelConfig, RopeThetaInsideRopeScaling) {
  ModelConfig c = parse(R"({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 4, "rope_scaling": {"rope_type": "default", "rope_theta": 5000.0}})");
  EXPECT_DOUBLE_EQ(c.rope.base, 5000.0);
}

// GLM-4-9B in transformers' layout; 5.x keeps partial_rotary_factor in rope_parameters.
TEST(ModelConfig, GlmHfLayout) {
  ModelConfig c = parse(R"({"model_type": "glm", "hidden_size": 4096, "intermediate_size": 13696,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
    "vocab_size": 151552, "rms_norm_eps": 1.5625e-07, "attention_bias": true, "pad_token_id": 151329,
    "eos_token_id": [151329, 151336, 151338],
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}})");
  EXPECT_EQ(c.rope.style, ops::RopeStyle::kInterleaved);
  EXPECT_DOUBLE_EQ(c.rope.rotary_fraction, 0.5);
  EXPECT_TRUE(c.fused_gate_up);
  EXPECT_FALSE(c.sandwich_norms);
  EXPECT_EQ(c.pad_token_id, 151329);
  EXPECT_EQ(c.eos_token_ids, (std::vector<std::int64_t>{151329, 151336, 151338}));
  auto layer = parameter_layout(c).layers.at(0);
  EXPECT_EQ(layer[kGateUp]->name, "model.layers.0.mlp.gate_up_proj.weight");
  EXPECT_EQ(layer[kGateUp]->shape, Shape({2 * 13696, 4096}));
  EXPECT_EQ(layer[kKBias]->shape, Shape({256}));
}

TEST(ModelConfig, Glm4AddsSandwichNorms) {
  ModelConfig c = parse_config(tiny_config_json(Architecture::kGlm4), "glm4");
  EXPECT_TRUE(c.sandwich_norms);
  auto layer = parameter_layout(c).layers.at(1);
  EXPECT_EQ(layer[kPostSelfAttnNorm]->name, "model.layers.1.post_self_attn_layernorm.weight");
  EXPECT_EQ(layer[kPostMlpNorm]->name, "model.layers.1.post_mlp_layernorm.weight");
}

// chatglm3-6b's config.json (THUDM's keys).
TEST(ModelConfig, ChatGlm3ThudmLayout) {
  ModelConfig c = parse(R"({"model_type": "chatglm", "architectures": ["ChatGLMModel"], "num_layers": 28,
    "padded_vocab_size": 65024, "hidden_size": 4096, "ffn_hidden_size": 13696, "kv_channels": 128,
    "num_attention_heads": 32, "multi_query_attention": true, "multi_query_group_num": 2,
    "layernorm_epsilon": 1e-05, "rmsnorm": true, "add_bias_linear": false, "add_qkv_bias": true,
    "post_layer_norm": true, "apply_residual_connection_post_layernorm": false, "original_rope": true,
    "eos_token_id": 2, "pad_token_id": 0, "torch_dtype": "float16", "tie_word_embeddings": false})");
  EXPECT_EQ(c.arch, Architecture::kChatGlm);
  EXPECT_EQ(c.vocab_size, 65024);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_DOUBLE_EQ(c.rope.base, 10000.0);
  EXPECT_DOUBLE_EQ(c.rope.rotary_fraction, 0.5);
  EXPECT_EQ(c.norm_style, ops::RmsNormStyle::kGlm);
  EXPECT_FALSE(c.pad_token_id.has_value());
  ParameterLayout layout = parameter_layout(c);
  EXPECT_EQ(layout.embedding.name, "transformer.embedding.word_embeddings.weight");
  EXPECT_EQ(layout.layers[27][kQkv]->name, "transformer.encoder.layers.27.self_attention.query_key_value.weight");
  EXPECT_EQ(layout.layers[27][kQkv]->shape, Shape({4608, 4096}));
  EXPECT_EQ(layout.layers[27][kQkvBias]->shape, Shape({4608}));
  EXPECT_FALSE(layout.layers[27][kOBias].has_value());
  EXPECT_EQ(layout.layers[0][kGateUp]->shape, Shape({27392, 4096}));
  EXPECT_EQ(layout.final_norm->name, "transformer.encoder.final_layernorm.weight");
  EXPECT_EQ(layout.lm_head->name, "transformer.output_layer.weight");
  EXPECT_TRUE(is_carried_buffer("transformer.rotary_pos_emb.inv_freq"));
}

TEST(ModelConfig, Glm4ThudmLayoutRopeRatio) {
  ModelConfig c = parse(R"({"model_type": "chatglm", "num_layers": 40, "padded_vocab_size": 151552,
    "multi_query_attention": true, "multi_query_group_num": 2, "layernorm_epsilon": 1.5625e-07,
    "rope_ratio": 500, "add_qkv_bias": true, "eos_token_id": [151329, 151336, 151338]})");
  EXPECT_DOUBLE_EQ(c.rope.base, 5e6);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1.5625e-7);
  EXPECT_EQ(c.hidden_size, 4096);  // ChatGLMConfig's default
  EXPECT_EQ(c.num_layers, 40);
}

TEST(ModelConfig, SlidingWindowOnlyWhereEnabled) {
  nlohmann::ordered_json json = tiny_config_json(Architecture::kQwen2);
  json["num_hidden_layers"] = 4;
  json["sliding_window"] = 16;
  json["max_window_layers"] = 2;
  EXPECT_EQ(parse_config(json, "x").sliding_layers, std::vector<bool>(4, false));
  json["use_sliding_window"] = true;
  EXPECT_EQ(parse_config(json, "x").sliding_layers, (std::vector<bool>{false, false, true, true}));
  json["layer_types"] = {"sliding_attention", "full_attention", "full_attention", "sliding_attention"};
  EXPECT_EQ(parse_config(json, "x").sliding_layers, (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(parse_config(json, "x").sliding_window, 16);
}

TEST(ModelConfig, UnknownModelTypeListsTheSupportedOnes) {
  expect_mentions(error_of([] { parse(R"({"model_type": "llama"})"); }),
                  {"test config.json", "llama", "qwen2", "qwen3", "glm", "glm4", "chatglm"});
  expect_mentions(error_of([] { parse(R"({"hidden_size": 8})"); }), {"model_type", "qwen2"});
}

// The first ChatGLM-6B's config.json (THUDM/chatglm-6b) shares model_type "chatglm" with
// ChatGLM2/3 but describes GLM-130B's blocks; read with ChatGLM2's defaults it would be
// another model.
TEST(ModelConfig, FirstChatGlmIsRefused) {
  const std::string message = error_of([] {
    parse(R"({"architectures": ["ChatGLMModel"], "bos_token_id": 130004, "eos_token_id": 130005,
      "mask_token_id": 130000, "gmask_token_id": 130001, "pad_token_id": 3, "hidden_size": 4096,
      "inner_hidden_size": 16384, "layernorm_epsilon": 1e-05, "max_sequence_length": 2048, "model_type": "chatglm",
      "num_attention_heads": 32, "num_layers": 28, "position_encoding_2d": true, "torch_dtype": "float16",
      "use_cache": true, "vocab_size": 130528})");
  });
  expect_mentions(message, {"test config.json", "'position_encoding_2d' marks the first ChatGLM-6B", "LayerNorm",
                            "ChatGLM2-6B, ChatGLM3-6B and GLM-4"});
}

// Qwen2-VL, Qwen2.5-VL and GLM-4V folders hold a vision tower beside the language model.
TEST(ModelConfig, VisionLanguageModelTypesAreNamedAsSuch) {
  for (const char* type : {"qwen2_vl", "qwen2_5_vl", "glm4v"})
    expect_mentions(error_of([&] { parse((std::string(R"({"model_type": ")") + type + "\"}").c_str()); }),
                    {type, "vision-language model", "text-only", "Qwen2.5-7B-Instruct"});
  // THUDM's glm-4v-9b: the chatglm type, its vision tower in vision_config.
  expect_mentions(error_of([] { parse(R"({"model_type": "chatglm", "vision_config": {"hidden_size": 1792}})"); }),
                  {"'chatglm' with a vision_config", "vision-language model"});
}

TEST(ModelConfig, WrongTypesAndUnsupportedFeaturesNameTheKey) {
  expect_mentions(error_of([] { parse(R"({"model_type": "qwen2", "hidden_size": "big"})"); }),
                  {"test config.json", "hidden_size", "integer", "\"big\""});
  expect_mentions(error_of([] { parse(R"({"model_type": "qwen2", "rope_scaling": {"type": "yarn", "factor": 4}})"); }),
                  {"rope_scaling", "yarn", "default"});
  expect_mentions(error_of([] { parse(R"({"model_type": "qwen2", "hidden_act": "gelu"})"); }), {"hidden_act", "gelu"});
  expect_mentions(
      error_of([] {
        parse(R"({"model_type": "qwen2", "num_attention_heads": 6, "num_key_value_heads": 4, "hidden_size": 48})");
      }),
      {"6 attention heads", "4 key/value heads"});
  expect_mentions(error_of([] { parse(R"({"model_type": "chatglm", "rmsnorm": false})"); }), {"rmsnorm", "LayerNorm"});
  expect_mentions(error_of([] { parse(R"({"model_type": "qwen2", "num_hidden_layers": 0})"); }),
                  {"num_hidden_layers", "positive"});
  expect_mentions(error_of([] { parse(R"({"model_type": "glm", "vocab_size": 100})"); }),
                  {"pad_token_id", "151329", "100"});
}

TEST(ModelConfig, MissingOrMalformedFileNamesThePath) {
  testing::ScratchDir dir;
  expect_mentions(error_of([&] { load_config(dir.str()); }), {"config.json", dir.str().c_str()});
  testing::write_bytes(dir.file("config.json"), "{not json");
  expect_mentions(error_of([&] { load_config(dir.str()); }), {"config.json", "not valid JSON"});
}

TEST(ModelConfig, KeepsTheFileForSaving) {
  ModelConfig c = parse(R"({"model_type": "qwen2", "zeta": 1, "alpha": 2})");
  EXPECT_EQ(c.raw.dump(), R"({"model_type":"qwen2","zeta":1,"alpha":2})");
  EXPECT_EQ(c.source, "test config.json");
}

}  // namespace
}  // namespace zt::models
