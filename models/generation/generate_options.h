// How `generate` picks tokens, with the names and defaults of transformers' GenerationConfig,
// read from a model folder's generation_config.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/config/config.h"

namespace zt::models {

// New tokens per answer in `zerotune generate` and `chat` when nothing sets max_new_tokens:
// transformers' own default (max_length 20, the prompt included) cuts most answers
// mid-sentence, so an answer gets up to this many, fewer where the context ends first.
inline constexpr std::int64_t kDefaultMaxNewTokens = 2048;

struct GenerationOptions {
  // transformers' GenerationConfig default; kDefaultMaxNewTokens when read from a model folder
  // that sets none, which fit_answer_length then fits to each prompt.
  std::int64_t max_new_tokens = 20;
  bool max_new_tokens_set = false;          // by generation_config.json or a flag
  std::int64_t max_length = 0;              // generation_config.json's limit on prompt and answer together; 0: none
  std::int64_t min_new_tokens = 0;          // eos ids are barred until this many tokens are out
  bool do_sample = false;                   // false: greedy
  double temperature = 1.0;                 // sampling only
  std::int64_t top_k = 50;                  // sampling only; 0 keeps every token
  double top_p = 1.0;                       // sampling only; 1 keeps every token
  double min_p = 0.0;                       // sampling only; keeps p >= min_p * the top p; 0 keeps every token
  double repetition_penalty = 1.0;          // greedy and sampling; 1 changes nothing
  std::uint64_t seed = 0;                   // sampling draws from the Philox stream of this seed
  std::vector<std::int64_t> eos_token_ids;  // generation stops after emitting one of these
};

// generation_config.json of `model_dir` when it exists (do_sample, temperature, top_k, top_p, min_p,
// repetition_penalty, max_new_tokens, max_length, eos_token_id), else the defaults with
// config.json's eos_token_id. Malformed values are errors naming the file and key.
GenerationOptions load_generation_options(const std::string& model_dir, const ModelConfig& config);

// A parsed generation_config.json from `source`: its values over the defaults, with
// `default_eos_ids` unless the file names eos_token_id. Checked as load_generation_options does.
GenerationOptions parse_generation_config(const nlohmann::ordered_json& json, const std::string& source,
                                          std::vector<std::int64_t> default_eos_ids);

// What limited an answer's length (fit_answer_length).
enum class AnswerLimit {
  kSet,        // max_new_tokens, from a flag or generation_config.json
  kDefault,    // kDefaultMaxNewTokens
  kMaxLength,  // generation_config.json's max_length, which counts the prompt too
  kContext,    // the model's context, which the prompt leaves `room` positions of
};

struct FittedAnswer {
  GenerationOptions options;
  AnswerLimit limit;
};

// `options` for a prompt of `prompt_tokens` with `room` positions of the model's context left
// after it (a model without a known context: any large number). A max_new_tokens that was set
// stays as it is (a request past the context is then refused where it runs, naming the
// numbers); otherwise the answer gets options.max_new_tokens (kDefaultMaxNewTokens as read from
// a model folder), fewer when max_length or the context leaves less (never below 0), and
// min_new_tokens is capped at the result.
FittedAnswer fit_answer_length(GenerationOptions options, std::int64_t prompt_tokens, std::int64_t room);

// Throws zt::Error naming the option when a value is out of range (temperature <= 0 when
// sampling, top_p outside (0, 1], min_p outside [0, 1], negative top_k, repetition_penalty <= 0, ...).
void check_generation_options(const GenerationOptions& options);

}  // namespace zt::models
