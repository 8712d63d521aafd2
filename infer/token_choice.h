// The next token of every sequence of a batch from its row of logits. Greedy rows without a
// repetition penalty take the argmax; the others run transformers' logits processors through
// ops::sample_rows (ops/sampling/sampling.h), on the device when the logits are. Only the
// chosen ids cross to the host.
#pragma once

#include <cstdint>
#include <vector>

#include "models/generation/generate_options.h"
#include "tensor/tensor.h"

namespace zt::infer {

struct SequenceState {
  std::size_t request = 0;
  const models::GenerationOptions* options = nullptr;
  std::vector<std::int64_t> seen;       // prompt and generated so far (repetition penalty)
  std::vector<std::int64_t> generated;  // new tokens so far
};

// logits [rows, vocab], row i belonging to rows[i]; `argmax` int64 [rows] when the caller
// already has each row's argmax on the device (else it is computed when needed).
std::vector<std::int64_t> choose_next_tokens(const Tensor& logits, const std::vector<const SequenceState*>& rows,
                                             const Tensor& argmax = Tensor());

}  // namespace zt::infer
