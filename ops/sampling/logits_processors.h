// transformers' logits processors on one row of float64 logits, in generate's order:
// barred ids, repetition penalty, then (sampling only) temperature, top-k, top-p and min-p. They are
// the CPU reference of ops/sampling/sampling.h, and what models::choose_token runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace zt::ops {

// Every id of `ids` inside the row gets logit -inf (MinNewTokensLengthLogitsProcessor bars
// the eos ids this way until min_new_tokens).
void bar_tokens(std::vector<double>& logits, std::span<const std::int64_t> ids);

// Every id in `seen` (repeats count once, ids outside the row are ignored) gets its logit
// divided by the penalty when positive and multiplied by it when negative
// (RepetitionPenaltyLogitsProcessor).
void apply_repetition_penalty(std::vector<double>& logits, std::span<const std::int64_t> seen, double penalty);

// Logits of tokens outside the k largest become -inf; ties with the k-th stay. k <= 0 or
// k >= the row's size changes nothing.
void apply_top_k(std::vector<double>& logits, std::int64_t k);

// Keeps the smallest set of most likely tokens whose probability reaches top_p (at least one),
// as transformers' TopPLogitsWarper finds it: ascending stable sort, cumulative sum.
void apply_top_p(std::vector<double>& logits, double top_p);

// Tokens less likely than min_p times the most likely one become -inf, as transformers'
// MinPLogitsWarper drops them (after top-p, as there): exp(logit - max) < min_p, which is
// p < min_p * p_max without the softmax's shared division. min_p <= 0 changes nothing; the
// most likely token always stays (min_p <= 1).
void apply_min_p(std::vector<double>& logits, double min_p);

// The index std::max_element gives: the first of the largest logits. A NaN is never larger
// than anything, so NaNs are passed over, unless the row starts with one (then 0).
std::int64_t first_argmax(const std::vector<double>& logits);

// softmax(logits) - exp(l - max) / sum - summed in index order.
std::vector<double> softmax(const std::vector<double>& logits);

}  // namespace zt::ops
