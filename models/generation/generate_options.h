// How `generate` picks tokens, with the names and defaults of transformers' GenerationConfig,
// read from a model folder's generation_config.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/config/config.h"

namespace zt::models {

struct GenerationOptions {
  std::int64_t max_new_tokens = 20;
  std::int64_t min_new_tokens = 0;          // eos ids are barred until this many tokens are out
  bool do_sample = false;                   // false: greedy
  double temperature = 1.0;                 // sampling only
  std::int64_t top_k = 50;                  // sampling only; 0 keeps every token
  double top_p = 1.0;                       // sampling only; 1 keeps every token
  double repetition_penalty = 1.0;          // greedy and sampling; 1 changes nothing
  std::uint64_t seed = 0;                   // sampling draws from the Philox stream of this seed
  std::vector<std::int64_t> eos_token_ids;  // generation stops after emitting one of these
};

// generation_config.json of `model_dir` when it exists (do_sample, temperature, top_k, top_p,
// repetition_penalty, max_new_tokens, eos_token_id), else the defaults with config.json's
// eos_token_id. Malformed values are errors naming the file and key.
GenerationOptions load_generation_options(const std::string& model_dir, const ModelConfig& config);

// A parsed generation_config.json from `source`: its values over the defaults, with
// `default_eos_ids` unless the file names eos_token_id. Checked as load_generation_options does.
GenerationOptions parse_generation_config(const nlohmann::ordered_json& json, const std::string& source,
                                          std::vector<std::int64_t> default_eos_ids);

// Throws zt::Error naming the option when a value is out of range (temperature <= 0 when
// sampling, top_p outside (0, 1], negative top_k, repetition_penalty <= 0, ...).
void check_generation_options(const GenerationOptions& options);

}  // namespace zt::models
