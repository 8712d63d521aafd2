// The logits processors of transformers' generate, in its order, on one row of logits:
// repetition penalty, then (sampling only) temperature, top-k and top-p, then the choice.
// They run ops/sampling/logits_processors.h, which is also the CPU reference of the batched
// device op ops::sample_rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/generation/generate_options.h"
#include "ops/sampling/sampling.h"

namespace zt::models {

// Every id in `seen` (prompt and generated so far) gets its logit divided by the penalty
// when positive and multiplied by it when negative (RepetitionPenaltyLogitsProcessor).
void apply_repetition_penalty(std::vector<double>& logits, const std::vector<std::int64_t>& seen, double penalty);

// Before `generated` reaches options.min_new_tokens, every eos id's logit becomes -inf
// (MinNewTokensLengthLogitsProcessor).
void apply_min_new_tokens(std::vector<double>& logits, std::int64_t generated, const GenerationOptions& options);

// Logits of tokens outside the k largest become -inf; ties with the k-th stay.
void apply_top_k(std::vector<double>& logits, std::int64_t k);

// Keeps the smallest set of most likely tokens whose probability reaches top_p (at least one).
void apply_top_p(std::vector<double>& logits, double top_p);

// The index of the largest logit (the first of equals).
std::int64_t argmax(const std::vector<double>& logits);

// The sampling op's rules for one row under `options`: its processors' settings, the ids the
// penalty applies to, the ids barred (the caller's eos before min_new_tokens) and the draw.
// The spans must outlive the rules.
ops::RowSampling row_sampling(const GenerationOptions& options, std::span<const std::int64_t> seen,
                              std::span<const std::int64_t> barred, double uniform);

// The next token after `seen`: greedy, or sampled with `uniform` in [0, 1).
std::int64_t choose_token(std::vector<double> logits, const std::vector<std::int64_t>& seen,
                          const GenerationOptions& options, double uniform);

}  // namespace zt::models
