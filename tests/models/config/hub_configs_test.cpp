// config.json and generation_config.json files of published checkpoints, as found
// (tests/data/hub_metadata/README.md), read without weights: what each family's file says, and
// the ones zerotune must refuse with a message that names the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "models/config/config.h"
#include "models/generation/generate_options.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

using testing::error_of;
using testing::expect_mentions;

std::string config_path(const std::string& name) {
  return (std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/hub_metadata/configs" / name).string();
}

ModelConfig read_config(const std::string& name) {
  const std::string path = config_path(name);
  return parse_config(read_json_file(path), path);
}

// The layer stack and attention heads a config gives.
struct Heads {
  Architecture arch;
  std::int64_t layers, heads, kv_heads, head_dim;
};

void expect_heads(const ModelConfig& c, const Heads& want) {
  EXPECT_EQ(c.arch, want.arch);
  EXPECT_EQ(c.num_layers, want.layers);
  EXPECT_EQ(c.num_heads, want.heads);
  EXPECT_EQ(c.num_kv_heads, want.kv_heads);
  EXPECT_EQ(c.head_dim, want.head_dim);
}

std::string refusal(const std::string& name) {
  return error_of([&] { read_config(name); });
}

TEST(HubConfigs, Qwen25BaseModels) {
  const ModelConfig small = read_config("qwen2.5-3b.json");
  EXPECT_EQ(small.arch, Architecture::kQwen2);
  EXPECT_EQ(small.num_kv_heads, 2);
  EXPECT_EQ(small.head_dim, 128);
  EXPECT_TRUE(small.tie_word_embeddings);
  EXPECT_TRUE(small.qkv_bias);
  EXPECT_DOUBLE_EQ(small.rope.base, 1e6);
  EXPECT_EQ(small.eos_token_ids, (std::vector<std::int64_t>{151643}));
  const ModelConfig large = read_config("qwen2.5-14b.json");
  EXPECT_DOUBLE_EQ(large.norm_eps, 1e-5);  // 14B and 32B base models use 1e-5
  EXPECT_FALSE(large.tie_word_embeddings);
  EXPECT_EQ(context_length(large), 131072);
  // use_sliding_window false: no layer has a window, whatever sliding_window says.
  for (const bool sliding : large.sliding_layers) EXPECT_FALSE(sliding);
}

TEST(HubConfigs, QwenNullKeysAndWindowLayersBeyondTheModel) {
  const ModelConfig instruct = read_config("qwen2-7b-instruct.json");  // rope_scaling, sliding_window null
  EXPECT_EQ(instruct.num_kv_heads, 4);
  EXPECT_DOUBLE_EQ(instruct.rope.base, 1e6);
  EXPECT_EQ(instruct.torch_dtype, "bfloat16");
  const ModelConfig sakura = read_config("sakura-14b-qwen2.5.json");  // max_window_layers 70 of 48 layers
  EXPECT_EQ(sakura.num_layers, 48);
  EXPECT_EQ(sakura.sliding_layers.size(), 48U);
  EXPECT_EQ(sakura.torch_dtype, "float16");
}

TEST(HubConfigs, Qwen3DenseModels) {
  const ModelConfig c4 = read_config("qwen3-4b.json");
  EXPECT_EQ(c4.arch, Architecture::kQwen3);
  EXPECT_TRUE(c4.qk_norm);
  EXPECT_FALSE(c4.qkv_bias);
  EXPECT_FALSE(c4.o_bias);
  EXPECT_TRUE(c4.tie_word_embeddings);
  EXPECT_EQ(c4.q_size(), 4096);  // 32 heads of 128, wider than hidden_size 2560
  const ModelConfig c8 = read_config("qwen3-8b.json");
  EXPECT_FALSE(c8.tie_word_embeddings);
  EXPECT_EQ(c8.eos_token_ids, (std::vector<std::int64_t>{151645}));
  const ModelConfig thinking = read_config("qwen3-4b-thinking-2507.json");
  EXPECT_DOUBLE_EQ(thinking.rope.base, 5e6);
  EXPECT_EQ(context_length(thinking), 262144);
}

TEST(HubConfigs, Glm4AndChatGlm23InThudmLayout) {
  const ModelConfig glm4 = read_config("glm-4-9b-chat.json");
  EXPECT_EQ(glm4.arch, Architecture::kChatGlm);
  EXPECT_DOUBLE_EQ(glm4.rope.base, 5e6);  // 10000 * rope_ratio 500
  EXPECT_EQ(glm4.num_kv_heads, 2);
  EXPECT_EQ(glm4.vocab_size, 151552);
  EXPECT_TRUE(glm4.qkv_bias);
  EXPECT_FALSE(glm4.mlp_bias);
  EXPECT_EQ(glm4.eos_token_ids, (std::vector<std::int64_t>{151329, 151336, 151338}));
  EXPECT_EQ(context_length(glm4), 131072);
  const ModelConfig chatglm2 = read_config("chatglm2-6b.json");  // quantization_bit 0, pre_seq_len null
  EXPECT_EQ(chatglm2.vocab_size, 65024);
  EXPECT_DOUBLE_EQ(chatglm2.rope.base, 10000.0);
  EXPECT_EQ(chatglm2.num_layers, 28);
  EXPECT_EQ(context_length(chatglm2), 32768);
}

TEST(HubConfigs, SmallQwen25InstructAndR1Distill) {
  const ModelConfig half = read_config("qwen2.5-0.5b-instruct.json");  // float32 weights, 14 heads of 64
  expect_heads(half, {.arch = Architecture::kQwen2, .layers = 24, .heads = 14, .kv_heads = 2, .head_dim = 64});
  EXPECT_EQ(half.hidden_size, 896);
  EXPECT_TRUE(half.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(half.rope.base, 1e6);
  EXPECT_EQ(half.torch_dtype, "float32");
  EXPECT_EQ(half.eos_token_ids, (std::vector<std::int64_t>{151645}));
  // max_window_layers 21 with use_sliding_window false: every layer attends in full.
  for (const bool sliding : half.sliding_layers) EXPECT_FALSE(sliding);
  const ModelConfig r1 = read_config("deepseek-r1-distill-qwen-1.5b.json");  // rope_theta 10000 written as an integer
  EXPECT_EQ(r1.arch, Architecture::kQwen2);
  EXPECT_EQ(r1.head_dim, 128);
  EXPECT_EQ(r1.num_kv_heads, 2);
  EXPECT_DOUBLE_EQ(r1.rope.base, 10000.0);
  EXPECT_FALSE(r1.tie_word_embeddings);
  EXPECT_EQ(r1.sliding_window, 0);  // sliding_window 4096, but use_sliding_window false
  EXPECT_EQ(r1.bos_token_id, 151643);
  EXPECT_EQ(r1.eos_token_ids, (std::vector<std::int64_t>{151643}));
  EXPECT_EQ(context_length(r1), 131072);
}

TEST(HubConfigs, Qwen25WrittenByTransformers5) {
  // dtype instead of torch_dtype, rope_parameters, layer_types of full_attention, pad_token_id null.
  const ModelConfig c = read_config("qwen2.5-1.5b-instruct-transformers-5.json");
  EXPECT_EQ(c.arch, Architecture::kQwen2);
  EXPECT_EQ(c.num_layers, 28);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_DOUBLE_EQ(c.rope.base, 1e6);
  EXPECT_EQ(c.torch_dtype, "float16");
  EXPECT_FALSE(c.pad_token_id.has_value());
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.sliding_layers.size(), 28U);
  for (const bool sliding : c.sliding_layers) EXPECT_FALSE(sliding);
  const std::string path = config_path("qwen2.5-1.5b-instruct-transformers-5.generation_config.json");
  const GenerationOptions options = parse_generation_config(read_json_file(path), path, c.eos_token_ids);
  EXPECT_TRUE(options.do_sample);
  EXPECT_DOUBLE_EQ(options.temperature, 0.7);
  EXPECT_EQ(options.top_k, 20);
  EXPECT_DOUBLE_EQ(options.top_p, 0.8);
  EXPECT_DOUBLE_EQ(options.repetition_penalty, 1.1);
  EXPECT_FALSE(options.max_new_tokens_set);
  EXPECT_EQ(options.eos_token_ids, (std::vector<std::int64_t>{151645, 151643}));
}

TEST(HubConfigs, ChatGlm3WithWindowsLineEndings) {
  const ModelConfig c = read_config("chatglm3-6b.json");  // CRLF, no rope_ratio (ChatGLM3-6B, 8k)
  expect_heads(c, {.arch = Architecture::kChatGlm, .layers = 28, .heads = 32, .kv_heads = 2, .head_dim = 128});
  EXPECT_EQ(c.vocab_size, 65024);
  EXPECT_DOUBLE_EQ(c.rope.base, 10000.0);
  EXPECT_DOUBLE_EQ(c.rope.rotary_fraction, 0.5);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.torch_dtype, "float16");
  EXPECT_EQ(c.eos_token_ids, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(context_length(c), 8192);
}

TEST(HubConfigs, FirstChatGlmIsRefusedAsAnotherArchitecture) {
  expect_mentions(refusal("chatglm-6b.json"),
                  {"chatglm-6b.json", "position_encoding_2d", "first ChatGLM-6B", "THUDM/chatglm3-6b"});
}

TEST(HubConfigs, ChatGlmQuantizationBitIsRefused) {
  expect_mentions(refusal("chatglm2-6b-int4-ptuning.json"),
                  {"chatglm2-6b-int4-ptuning.json", "quantization_bit 4", "use the model this one was quantized from"});
}

TEST(HubConfigs, MixtureOfExpertsAndGptqAreRefused) {
  expect_mentions(refusal("qwen3-30b-a3b.json"),
                  {"model_type 'qwen3_moe' is a mixture-of-experts model", "dense", "qwen3"});
  expect_mentions(refusal("qwen1.5-32b-chat-gptq-int4.json"), {"GPTQ 4-bit (quantization_config.quant_method 'gptq')",
                                                               "use the model this one was quantized from"});
}

// Qwen's model cards tell users to add this block for inputs past 32,768 tokens; the refusal
// says what it is for and that removing it reads the model as released.
TEST(HubConfigs, YarnAddedAsQwensModelCardsSayIsRefusedSayingWhatToDo) {
  expect_mentions(refusal("qwen2.5-coder-32b-instruct-yarn.json"),
                  {"qwen2.5-coder-32b-instruct-yarn.json", "rope_scaling asks for RoPE type 'yarn'", "factor 4",
                   "original_max_position_embeddings 32768", "remove rope_scaling from config.json",
                   "plain RoPE, as the model was released", "32768 positions"});
}

TEST(HubConfigs, GenerationConfigWithKeysZerotuneDoesNotUse) {
  const std::string path = config_path("sakura-14b-qwen2.5.generation_config.json");
  const GenerationOptions options = parse_generation_config(read_json_file(path), path, {151645});
  EXPECT_TRUE(options.do_sample);
  EXPECT_DOUBLE_EQ(options.temperature, 0.1);
  EXPECT_EQ(options.top_k, 30);
  EXPECT_DOUBLE_EQ(options.repetition_penalty, 1.05);
  EXPECT_TRUE(options.max_new_tokens_set);
  EXPECT_EQ(options.max_new_tokens, 131072);
  EXPECT_EQ(options.eos_token_ids, (std::vector<std::int64_t>{151645, 151643}));
}

}  // namespace
}  // namespace zt::models
