// The reference generation path: text from a prompt of token ids with a one-sequence KV
// cache: the prompt runs once, then one token per step attends to everything cached, as
// transformers' generate does with its cache. Tests use it as the oracle of infer/'s engine
// (continuous batching, paged cache, CUDA graphs), which is what `zerotune generate`, `chat`
// and every user-facing path run: change generation behaviour there, and here only to keep
// the oracle in step.
#pragma once

#include <cstdint>
#include <vector>

#include "models/generation/generate_options.h"
#include "models/model.h"

namespace zt::models {

// The new token ids after `prompt` (not the prompt itself): at most options.max_new_tokens,
// ending with an eos id when one is produced. Runs without gradient. A model with a P-Tuning
// prefix (models/peft/prefix_encoder.h) caches the prefix first; the prompt's positions start at 0,
// or after the prefix for a PEFT prefix (PrefixPositions::kAfterPrefix).
std::vector<std::int64_t> generate(const CausalLM& model, const std::vector<std::int64_t>& prompt,
                                   const GenerationOptions& options);

}  // namespace zt::models
