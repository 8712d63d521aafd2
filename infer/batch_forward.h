// The two kinds of forward a continuous-batching step runs over a paged KV cache: a prefill
// of new prompts packed back to back, and a decode of one token per running sequence. Both
// return the logits of the last token of each sequence only, [sequences, vocab].
#pragma once

#include <cstdint>
#include <vector>

#include "infer/paged_kv_cache.h"
#include "models/model.h"

namespace zt::infer {

// Prompts of sequences just added to `cache`; positions start at the cache's first_position().
Tensor prefill_logits(const models::CausalLM& model, PagedKvCache& cache, const std::vector<SequenceId>& sequences,
                      const std::vector<const std::vector<std::int64_t>*>& prompts);

// tokens[i] continues sequence sequences[i].
Tensor decode_logits(const models::CausalLM& model, PagedKvCache& cache, const std::vector<SequenceId>& sequences,
                     const std::vector<std::int64_t>& tokens);

}  // namespace zt::infer
