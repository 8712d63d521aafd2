// The forward of a continuous-batching step over a paged KV cache: one token for each running
// sequence, then the prompts of sequences just added, packed back to back (either part may be
// empty), so one pass over the weights serves both. It returns the logits of each sequence's
// last token, [sequences, vocab], in that order.
#pragma once

#include <cstdint>
#include <vector>

#include "infer/paged_kv_cache.h"
#include "models/model.h"

namespace zt::infer {

struct StepInputs {
  std::vector<SequenceId> decoding;                       // running sequences
  std::vector<std::int64_t> tokens;                       // tokens[i] continues decoding[i]
  std::vector<SequenceId> prefilling;                     // sequences just added to the cache
  std::vector<const std::vector<std::int64_t>*> prompts;  // prompts[i] of prefilling[i]
};

// Positions continue each decoding sequence and start new prompts at the cache's first_position().
Tensor step_logits(const models::CausalLM& model, PagedKvCache& cache, const StepInputs& step);

}  // namespace zt::infer
