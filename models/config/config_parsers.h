// The per-family halves of parse_config: each fills the architecture from its own keys.
#pragma once

#include "models/config/config.h"
#include "models/config/config_json.h"

namespace zt::models::detail {

// qwen2, qwen3, glm, glm4: transformers' own configuration classes.
void parse_hf_config(const ConfigKeys& keys, ModelConfig& config);
// chatglm: THUDM's remote-code ChatGLMConfig (ChatGLM2/3, GLM-4 before transformers had it).
void parse_chatglm_config(const ConfigKeys& keys, ModelConfig& config);
// Throws, naming the method, when the file declares quantized weights (quantization_config):
// zerotune reads unquantized ones only. The one place to relax when a quantized format loads.
void refuse_quantized(const ConfigKeys& keys);

}  // namespace zt::models::detail
