#include "models/generation/generate_options.h"

#include <algorithm>
#include <filesystem>

#include "models/config/config_json.h"
#include "runtime/error.h"

namespace zt::models {

GenerationOptions load_generation_options(const std::string& model_dir, const ModelConfig& config) {
  std::string path = (std::filesystem::path(model_dir) / "generation_config.json").string();
  if (!std::filesystem::is_regular_file(path)) {
    GenerationOptions defaults;
    defaults.max_new_tokens = kDefaultMaxNewTokens;
    defaults.eos_token_ids = config.eos_token_ids;
    return defaults;
  }
  return parse_generation_config(read_json_file(path), path, config.eos_token_ids);
}

GenerationOptions parse_generation_config(const nlohmann::ordered_json& json, const std::string& source,
                                          std::vector<std::int64_t> default_eos_ids) {
  GenerationOptions options;
  options.eos_token_ids = std::move(default_eos_ids);
  detail::ConfigKeys keys(json, source);
  options.max_new_tokens_set = keys.has("max_new_tokens");
  options.max_new_tokens = keys.integer("max_new_tokens", kDefaultMaxNewTokens);
  options.max_length = keys.integer("max_length", 0);
  options.min_new_tokens = keys.integer("min_new_tokens", options.min_new_tokens);
  options.do_sample = keys.boolean("do_sample", options.do_sample);
  options.temperature = keys.number("temperature", options.temperature);
  options.top_k = keys.integer("top_k", options.top_k);
  options.top_p = keys.number("top_p", options.top_p);
  options.min_p = keys.number("min_p", options.min_p);
  options.repetition_penalty = keys.number("repetition_penalty", options.repetition_penalty);
  if (keys.has("eos_token_id")) options.eos_token_ids = keys.integer_list("eos_token_id");
  try {
    check_generation_options(options);
  } catch (const Error& e) {
    fail(source + ": " + e.what());
  }
  return options;
}

FittedAnswer fit_answer_length(GenerationOptions options, std::int64_t prompt_tokens, std::int64_t room) {
  if (options.max_new_tokens_set) return {options, AnswerLimit::kSet};
  FittedAnswer fitted{options, AnswerLimit::kDefault};
  std::int64_t& tokens = fitted.options.max_new_tokens;
  if (options.max_length > 0 && options.max_length - prompt_tokens < tokens) {
    tokens = options.max_length - prompt_tokens;
    fitted.limit = AnswerLimit::kMaxLength;
  }
  if (room < tokens) {
    tokens = room;
    fitted.limit = AnswerLimit::kContext;
  }
  tokens = std::max<std::int64_t>(tokens, 0);
  fitted.options.min_new_tokens = std::min(fitted.options.min_new_tokens, tokens);
  return fitted;
}

void check_generation_options(const GenerationOptions& o) {
  ZT_REQUIRE(o.max_new_tokens >= 0, "max_new_tokens must not be negative, got " + std::to_string(o.max_new_tokens));
  ZT_REQUIRE(o.max_length >= 0, "max_length must not be negative, got " + std::to_string(o.max_length));
  ZT_REQUIRE(o.min_new_tokens >= 0 && o.min_new_tokens <= o.max_new_tokens,
             "min_new_tokens must be between 0 and max_new_tokens (" + std::to_string(o.max_new_tokens) + "), got " +
                 std::to_string(o.min_new_tokens));
  ZT_REQUIRE(o.repetition_penalty > 0.0,
             "repetition_penalty must be positive, got " + std::to_string(o.repetition_penalty));
  if (!o.do_sample) return;
  ZT_REQUIRE(o.temperature > 0.0, "temperature must be positive when sampling, got " + std::to_string(o.temperature) +
                                      " (use greedy decoding instead of temperature 0)");
  ZT_REQUIRE(o.top_k >= 0, "top_k must not be negative, got " + std::to_string(o.top_k));
  ZT_REQUIRE(o.top_p > 0.0 && o.top_p <= 1.0, "top_p must be in (0, 1], got " + std::to_string(o.top_p));
  ZT_REQUIRE(o.min_p >= 0.0 && o.min_p <= 1.0, "min_p must be in [0, 1], got " + std::to_string(o.min_p));
}

}  // namespace zt::models
