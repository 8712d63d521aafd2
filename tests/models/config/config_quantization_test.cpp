// A config.json that declares quantized weights is refused naming the method, with the
// quantization_config blocks the published quantized models carry (GPTQ and AWQ Qwen2.5, a
// bitsandbytes 8-bit save, Qwen3's FP8, EETQ, HQQ, compressed-tensors): never read as if
// unquantized. bitsandbytes 4-bit is read (models/quant/ loads its weights).
#include <gtest/gtest.h>

#include "models/config/config.h"
#include "models/config/config_presets.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

using nlohmann::ordered_json;
using testing::error_of;
using testing::expect_mentions;

std::string error_with(const char* key, const char* block) {
  ordered_json config = tiny_config_json(Architecture::kQwen2);
  config[key] = ordered_json::parse(block);
  return error_of([&] { parse_config(config, "Qwen2.5-7B-Instruct-q/config.json"); });
}

struct Declared {
  const char* block;
  const char* named;  // what the message calls the method
};

TEST(QuantizedConfig, EachMethodIsRefusedByName) {
  const Declared methods[] = {
      {R"({"batch_size": 1, "bits": 4, "damp_percent": 0.01, "desc_act": false, "group_size": 128,
           "quant_method": "gptq", "sym": true, "true_sequential": true})",
       "GPTQ 4-bit (quantization_config.quant_method 'gptq')"},
      {R"({"bits": 4, "group_size": 128, "modules_to_not_convert": null, "quant_method": "awq",
           "version": "gemm", "zero_point": true})",
       "AWQ 4-bit (quantization_config.quant_method 'awq')"},
      {R"({"load_in_8bit": true, "llm_int8_threshold": 6.0, "quant_method": "bitsandbytes"})", "bitsandbytes 8-bit"},
      {R"({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]})",
       "FP8 (quantization_config.quant_method 'fp8')"},
      {R"({"quant_method": "eetq", "weights": "int8"})", "EETQ (quantization_config.quant_method 'eetq')"},
      {R"({"quant_method": "hqq", "quant_config": {"weight_quant_params": {"nbits": 4, "group_size": 64}}})",
       "HQQ (quantization_config.quant_method 'hqq')"},
      {R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0":
           {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true}}}})",
       "compressed-tensors (quantization_config.quant_method 'compressed-tensors')"},
      {R"({"quant_method": "some_new_method"})", "some_new_method (quantization_config.quant_method"},
      // bitsandbytes as transformers saved it before quant_method was written.
      {R"({"load_in_8bit": true})", "bitsandbytes 8-bit"},
      {R"({"bits": "four"})", "a method its quantization_config does not name"},
  };
  for (const Declared& method : methods) {
    const std::string msg = error_with("quantization_config", method.block);
    expect_mentions(msg, {"Qwen2.5-7B-Instruct-q/config.json: the model's weights are quantized with ", method.named,
                          "zerotune loads unquantized bf16, fp16 or fp32 weights, and bitsandbytes 4-bit ones",
                          "use the model this one was quantized from"});
  }
}

TEST(QuantizedConfig, OlderCompressedTensorsKeyIsRefusedToo) {
  expect_mentions(error_with("compression_config", R"({"quant_method": "compressed-tensors"})"),
                  {"compressed-tensors (compression_config.quant_method 'compressed-tensors')"});
}

TEST(QuantizedConfig, NullIsUnquantizedAndAMalformedBlockNamesTheKey) {
  ordered_json config = tiny_config_json(Architecture::kQwen2);
  config["quantization_config"] = nullptr;
  EXPECT_EQ(parse_config(config, "config.json").arch, Architecture::kQwen2);
  expect_mentions(error_with("quantization_config", R"("gptq")"), {"key 'quantization_config' must be an object"});
}

TEST(QuantizedConfig, BitsandbytesFourBitIsRead) {
  ordered_json config = tiny_config_json(Architecture::kQwen2);
  EXPECT_FALSE(parse_config(config, "config.json").bnb_4bit);
  config["quantization_config"] = ordered_json::parse(
      R"({"_load_in_4bit": true, "_load_in_8bit": false, "bnb_4bit_compute_dtype": "bfloat16",
          "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true, "load_in_4bit": true,
          "load_in_8bit": false, "llm_int8_skip_modules": ["lm_head", "mlp.down_proj"],
          "quant_method": "bitsandbytes"})");
  const ModelConfig read = parse_config(config, "config.json");
  EXPECT_TRUE(read.bnb_4bit);
  EXPECT_EQ(read.bnb_skip_modules, (std::vector<std::string>{"lm_head", "mlp.down_proj"}));
  // Saved before transformers wrote quant_method.
  config["quantization_config"] = ordered_json::parse(R"({"load_in_4bit": true, "bnb_4bit_quant_type": "fp4"})");
  EXPECT_TRUE(parse_config(config, "config.json").bnb_4bit);
  config["quantization_config"] =
      ordered_json::parse(R"({"load_in_4bit": true, "quant_method": "bitsandbytes", "llm_int8_skip_modules": "x"})");
  expect_mentions(error_of([&] { parse_config(config, "config.json"); }),
                  {"quantization_config", "llm_int8_skip_modules must be a list of module names"});
}

// THUDM's ChatGLM code saves its own quantization as quantization_bit beside packed integer
// weights (the keys of a chatglm2-6b-int4 P-Tuning checkpoint's config.json); 0 is unquantized.
TEST(QuantizedConfig, ChatGlmQuantizationBitIsRefused) {
  ordered_json config = tiny_config_json(Architecture::kChatGlm);
  config["quantization_bit"] = 0;
  config["pre_seq_len"] = nullptr;
  EXPECT_EQ(parse_config(config, "config.json").arch, Architecture::kChatGlm);
  config["_name_or_path"] = "E:/PycharmProjects/dl_models/chatglm2-6b-int4";
  config["pre_seq_len"] = 128;
  config["quantization_bit"] = 4;
  expect_mentions(error_of([&] { parse_config(config, "chatglm2-6b-int4/config.json"); }),
                  {"chatglm2-6b-int4/config.json: the model's weights are quantized with THUDM's 4-bit quantization",
                   "quantization_bit 4", "use the model this one was quantized from", "-int8"});
  config["quantization_bit"] = "4";
  expect_mentions(error_of([&] { parse_config(config, "config.json"); }),
                  {"key 'quantization_bit' must be an integer"});
}

// An unsupported family is named first: a quantized Llama is refused for being a Llama.
TEST(QuantizedConfig, TheModelTypeIsCheckedFirst) {
  ordered_json config = tiny_config_json(Architecture::kQwen2);
  config["model_type"] = "llama";
  config["quantization_config"] = ordered_json::parse(R"({"quant_method": "gptq", "bits": 4})");
  expect_mentions(error_of([&] { parse_config(config, "config.json"); }), {"model_type 'llama' is not supported"});
  // The first ChatGLM-6B's int4 release is refused for being that model, not for its bits.
  config = ordered_json::parse(R"({"model_type": "chatglm", "num_layers": 28, "hidden_size": 4096,
    "inner_hidden_size": 16384, "position_encoding_2d": true, "quantization_bit": 4, "vocab_size": 130528})");
  expect_mentions(error_of([&] { parse_config(config, "config.json"); }), {"marks the first ChatGLM-6B"});
}

}  // namespace
}  // namespace zt::models
