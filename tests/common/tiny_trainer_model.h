// The model the trainer's tests train: a two-layer Qwen2 of vocabulary 32, small enough that
// a few optimizer steps take milliseconds on the CPU; and the DeepSpeed config its ZeRO runs
// take.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

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

// A ds_config.json in the temporary folder, named `name` and the stage, for ZeRO `stage` with
// buckets of 300 elements (the tiny model fills several) and the batch sizes "auto" (from the
// flags); its path.
inline std::string write_zero_config(const std::string& name, int stage) {
  const std::filesystem::path ds = std::filesystem::temp_directory_path() / (name + std::to_string(stage) + ".json");
  std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                           "zero_optimization": {"reduce_bucket_size": 300, "stage": )"
                    << stage << "}}";
  return ds.string();
}

}  // namespace zt::testing
