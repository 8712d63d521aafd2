// The architecture of a model as its config.json describes it, in one shape for every
// supported family: Qwen2/2.5 (`qwen2`), Qwen3 (`qwen3`), GLM-4 in transformers' own layout
// (`glm`, `glm4`) and ChatGLM2/3 / GLM-4 in THUDM's layout (`chatglm`). Keys are read as
// transformers 4.x and 5.x write them (rope_theta at the top level or inside
// rope_parameters / rope_scaling, torch_dtype or dtype) and as THUDM's remote code names them;
// a key the file leaves out takes the default of the transformers config class it names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/norm/rmsnorm.h"
#include "ops/rope/rope.h"

namespace zt::models {

enum class Architecture { kQwen2, kQwen3, kGlm, kGlm4, kChatGlm };

const char* architecture_name(Architecture arch);  // the model_type it is read from
// "qwen2, qwen3, glm, glm4, chatglm": for error messages.
std::string supported_model_types();

struct ModelConfig {
  Architecture arch = Architecture::kQwen2;
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  double norm_eps = 1e-6;
  ops::RmsNormStyle norm_style = ops::RmsNormStyle::kQwen;
  ops::RopeConfig rope;  // style, base (rope_theta, or 10000 * rope_ratio), rotary fraction

  bool qkv_bias = false;             // q/k/v (or the fused query_key_value) carry a bias
  bool o_bias = false;               // the attention output projection carries a bias
  bool mlp_bias = false;             // ChatGLM's add_bias_linear: MLP projections carry biases
  bool qk_norm = false;              // Qwen3: RMSNorm over head_dim on q and k before RoPE
  bool sandwich_norms = false;       // glm4: RMSNorm after attention and after the MLP
  bool fused_qkv = false;            // ChatGLM: one query_key_value = [q; k; v]
  bool fused_gate_up = false;        // GLM: one gate_up_proj / dense_h_to_4h = [gate; up]
  bool final_norm = true;            // ChatGLM's post_layer_norm
  bool tie_word_embeddings = false;  // the LM head reuses the embedding table

  // Layers whose attention uses a sliding window (Qwen's use_sliding_window), and its width.
  std::vector<bool> sliding_layers;
  std::int64_t sliding_window = 0;

  double initializer_range = 0.02;
  std::optional<std::int64_t> pad_token_id;  // the embedding's padding_idx
  std::optional<std::int64_t> bos_token_id;
  std::vector<std::int64_t> eos_token_ids;
  std::string torch_dtype;  // as written ("bfloat16", ...); empty when absent

  // bitsandbytes 4-bit weights (quantization_config: quant_method bitsandbytes, load_in_4bit):
  // the decoder's linear weights are stored packed (models/quant/); false for dense weights.
  bool bnb_4bit = false;
  std::vector<std::string> bnb_skip_modules;  // llm_int8_skip_modules: modules left unquantized

  nlohmann::ordered_json raw;  // the file as read, key order kept, written back unchanged on save
  std::string source;          // the file it came from, for error messages

  std::int64_t q_size() const { return num_heads * head_dim; }
  std::int64_t kv_size() const { return num_kv_heads * head_dim; }
};

// Reads a parsed config.json; `source` names it in errors. Throws zt::Error naming the file
// and key for a missing structural key, a value of the wrong type, an unknown model_type
// (listing the supported ones), quantized weights (naming the method) or a feature zerotune
// does not implement.
ModelConfig parse_config(const nlohmann::ordered_json& json, const std::string& source);

// Positions the model was trained for: max_position_embeddings (Qwen, GLM) or seq_length
// (ChatGLM) of config.json; 0 when the file states neither.
std::int64_t context_length(const ModelConfig& config);

// Reads <model_dir>/config.json; a missing file is an error naming its path.
ModelConfig load_config(const std::string& model_dir);

// Reads a JSON file, naming it in the error when it is missing or malformed.
nlohmann::ordered_json read_json_file(const std::string& path);

// Parses JSON text that came from `source` (a file), naming it in the error when malformed.
nlohmann::ordered_json parse_json_text(std::string_view text, const std::string& source);

}  // namespace zt::models
