// The model the trainer's tests train: a two-layer Qwen2 of vocabulary 32, small enough that
// a few optimizer steps take milliseconds on the CPU.
#pragma once

#include "models/config/config.h"

namespace zt::testing {

inline models::ModelConfig tiny_trainer_config() {
  return models::parse_config(nlohmann::ordered_json::parse(R"({
    "model_type": "qwen2", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "max_position_embeddings": 64})"),
                              "tiny config");
}

}  // namespace zt::testing
