// What `zerotune generate` and `zerotune chat` share: the sampling flags (transformers'
// GenerationConfig names, defaults from the model's generation_config.json), the engine's
// batching flags, and the stop ids (the model's eos ids and the chat template's end of turn).
#pragma once

#include <set>
#include <string>

#include "cli/flags.h"
#include "infer/engine.h"
#include "models/chat_template.h"
#include "models/generate_options.h"
#include "models/tokenizer.h"

namespace zt::cli {

inline const std::set<std::string> kGenerationFlags{
    "--max_new_tokens", "--min_new_tokens", "--temperature", "--top_k",      "--top_p",
    "--repetition_penalty", "--seed",    "--max_batch",      "--block_size", "--template"};
inline const std::set<std::string> kGenerationBoolFlags{"--do_sample"};

// Usage lines for the flags above.
extern const char* const kGenerationUsage;

// generation_config.json of `model_dir` overridden by the flags; stops also at the
// tokenizer's eos and at `chat_template`'s end-of-turn tokens when one is given.
models::GenerationOptions generation_options_from(const Flags& flags, const std::string& model_dir,
                                                  const models::CausalLM& model, const models::Tokenizer& tokenizer,
                                                  const models::ChatTemplate* chat_template);

infer::EngineOptions engine_options_from(const Flags& flags);

// --template NAME, else the model's own (models::chat_template_name_for_model).
std::unique_ptr<models::ChatTemplate> chat_template_from(const Flags& flags, const std::string& model_dir);

// `text` as a number for `flag`; anything else is an error naming both.
double number_flag(const std::string& flag, const std::string& text);
std::int64_t integer_flag(const std::string& flag, const std::string& text);

}  // namespace zt::cli
