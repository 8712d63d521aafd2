// THUDM's ChatGLMConfig (configuration_chatglm.py shipped with ChatGLM2/3 and GLM-4): its own
// key names, with that class's defaults (the 6B model) for keys the file leaves out.
#include <string>

#include "models/config/config_parsers.h"

namespace zt::models::detail {
namespace {

// Variants of the block THUDM's code supports but these checkpoints never use.
void refuse_unsupported(const ConfigKeys& keys) {
  if (!keys.boolean("rmsnorm", true))
    keys.fail("rmsnorm false (LayerNorm blocks) is not supported; ChatGLM2/3 and GLM-4 use RMSNorm");
  if (keys.boolean("apply_residual_connection_post_layernorm", false))
    keys.fail("apply_residual_connection_post_layernorm true is not supported; ChatGLM2/3 and GLM-4 use false");
  if (keys.boolean("fp32_residual_connection", false))
    keys.fail("fp32_residual_connection true is not supported; ChatGLM2/3 and GLM-4 use false");
}

}  // namespace

void refuse_first_chatglm(const ConfigKeys& keys) {
  for (const char* key : {"position_encoding_2d", "inner_hidden_size"})
    if (keys.has(key))
      keys.fail(std::string("'") + key +
                "' marks the first ChatGLM-6B, whose blocks (LayerNorm, GeLU, 2D positions) zerotune does not "
                "implement; it reads ChatGLM2-6B, ChatGLM3-6B and GLM-4 (THUDM/chatglm3-6b, THUDM/glm-4-9b-chat)");
}

void parse_chatglm_config(const ConfigKeys& keys, ModelConfig& c) {
  refuse_unsupported(keys);
  c.vocab_size = keys.integer("padded_vocab_size", 65024);
  c.hidden_size = keys.integer("hidden_size", 4096);
  c.intermediate_size = keys.integer("ffn_hidden_size", 13696);
  c.num_layers = keys.integer("num_layers", 28);
  c.num_heads = keys.integer("num_attention_heads", 32);
  c.head_dim = keys.integer("kv_channels", 128);
  for (const char* key :
       {"padded_vocab_size", "hidden_size", "ffn_hidden_size", "num_layers", "num_attention_heads", "kv_channels"})
    keys.require_size(key, keys.integer(key, 1));
  c.num_kv_heads =
      keys.boolean("multi_query_attention", false) ? keys.integer("multi_query_group_num", 1) : c.num_heads;
  keys.require_size("multi_query_group_num", c.num_kv_heads);

  c.norm_eps = keys.number("layernorm_epsilon", 1e-5);
  c.norm_style = ops::RmsNormStyle::kGlm;
  // RotaryEmbedding(kv_channels // 2) over interleaved pairs, base 10000 * rope_ratio.
  c.rope.style = ops::RopeStyle::kInterleaved;
  c.rope.base = 10000.0 * keys.number("rope_ratio", 1.0);
  c.rope.rotary_fraction = 0.5;

  c.qkv_bias = keys.boolean("add_qkv_bias", false);
  c.o_bias = c.mlp_bias = keys.boolean("add_bias_linear", false);
  c.fused_qkv = true;
  c.fused_gate_up = true;
  c.final_norm = keys.boolean("post_layer_norm", true);
  // THUDM's checkpoints always carry their own transformer.output_layer.
  c.tie_word_embeddings = false;
  c.initializer_range = keys.number("initializer_range", 0.02);
  c.pad_token_id = std::nullopt;  // its nn.Embedding has no padding_idx
  c.sliding_layers.assign(static_cast<std::size_t>(c.num_layers), false);
}

}  // namespace zt::models::detail
