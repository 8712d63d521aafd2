#include "models/config/config_presets.h"

namespace zt::models {
namespace {

nlohmann::ordered_json hf_family(const char* model_type) {
  return {{"model_type", model_type}, {"vocab_size", 37},         {"hidden_size", 24},        {"intermediate_size", 20},
          {"num_hidden_layers", 2},   {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"hidden_act", "silu"},
          {"rms_norm_eps", 1e-6},     {"rope_theta", 10000.0},    {"pad_token_id", 0},        {"bos_token_id", 1},
          {"eos_token_id", 2},        {"torch_dtype", "float32"}};
}

}  // namespace

nlohmann::ordered_json tiny_config_json(Architecture arch) {
  switch (arch) {
    case Architecture::kQwen2: {
      nlohmann::ordered_json c = hf_family("qwen2");
      c["tie_word_embeddings"] = true;
      return c;
    }
    case Architecture::kQwen3: {
      nlohmann::ordered_json c = hf_family("qwen3");
      c["head_dim"] = 8;  // q is 32 wide beside a hidden size of 24, as in real Qwen3 models
      c["attention_bias"] = true;
      return c;
    }
    case Architecture::kGlm:
    case Architecture::kGlm4: {
      nlohmann::ordered_json c = hf_family(architecture_name(arch));
      c["head_dim"] = 8;
      c["partial_rotary_factor"] = 0.5;
      c["attention_bias"] = true;
      return c;
    }
    case Architecture::kChatGlm:
      return {{"model_type", "chatglm"},
              {"padded_vocab_size", 37},
              {"hidden_size", 24},
              {"ffn_hidden_size", 20},
              {"num_layers", 2},
              {"num_attention_heads", 4},
              {"kv_channels", 8},
              {"multi_query_attention", true},
              {"multi_query_group_num", 2},
              {"layernorm_epsilon", 1e-5},
              {"add_qkv_bias", true},
              {"add_bias_linear", true},
              {"rope_ratio", 2.0},
              {"eos_token_id", 2},
              {"pad_token_id", 0},
              {"torch_dtype", "float32"}};
  }
  return {};
}

}  // namespace zt::models
