// The per-family halves of parse_config: each fills the architecture from its own keys.
#pragma once

#include "models/config/config.h"
#include "models/config/config_json.h"

namespace zt::models::detail {

// qwen2, qwen3, glm, glm4: transformers' own configuration classes.
void parse_hf_config(const ConfigKeys& keys, ModelConfig& config);
// chatglm: THUDM's remote-code ChatGLMConfig (ChatGLM2/3, GLM-4 before transformers had it).
void parse_chatglm_config(const ConfigKeys& keys, ModelConfig& config);
// The first ChatGLM-6B shares model_type "chatglm" but is another architecture (GLM-130B's
// blocks): refused, as an unsupported family is, before anything else of the file.
void refuse_first_chatglm(const ConfigKeys& keys);
// The file's quantization_config: bitsandbytes 4-bit (load_in_4bit) sets config.bnb_4bit and
// its skipped modules; any other method (GPTQ, AWQ, FP8, bitsandbytes 8-bit, ChatGLM's own
// quantization_bit, ...) throws, naming it.
void read_quantization(const ConfigKeys& keys, ModelConfig& config);

}  // namespace zt::models::detail
