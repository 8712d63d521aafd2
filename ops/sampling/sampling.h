// The next token of every row of a batch of logits, by transformers' rules for each row:
// barred ids, repetition penalty, then greedy, or temperature, top-k, top-p, min-p and a draw.
//
// The CPU reference (sample_row, on the row as float64) is ops/sampling/logits_processors.h
// in generate's order. On a GPU every row is processed on the device in float64
// (cuda/sampling/sampling.cuh) and only the chosen ids reach the host. Everything before the
// softmax is the same arithmetic on both (float64 from the stored dtype is exact; division
// by the penalty and the temperature; comparisons for top-k), so greedy rows and top-k agree
// exactly. Where the device may differ is rounding after the softmax:
//  - its sums run in a fixed parallel order (each thread its share, then a tree; the draw's
//    cumulative sum is per-thread chunks in id order), the reference's one by one in index
//    order, and the device exp may differ from the host's in the last bit;
//  - top-p weighs the ascending cumulative mass against 1 - top_p in 62-bit fixed point
//    (exact sums of rounded probabilities), the reference in float64 added in sorted order.
// The two cumulative sums differ by at most about V * 2^-53 for a vocabulary of V (3e-11 at
// 151936; typically far less), so a token can differ only where the draw or 1 - top_p falls
// that close to a cumulative sum, which random draws and logits do with a probability of
// that order. Min-p drops a token whose exp(logit - max) is below min_p on both; the device exp
// may differ in the last bit, so a token exactly at the bound may be kept by one and not the other. The exception would
// be equal probabilities whose sum lands exactly on 1 - top_p (a tie group holding the mass, a round top_p): there the
// device replays the reference's float64 additions inside the group, so it agrees too. Rows holding NaN or +inf logits
// agree when greedy, not when sampling (the reference's sort is undefined there).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tensor/tensor.h"

namespace zt::ops {

// One row's rules. The spans must outlive the call.
struct RowSampling {
  bool do_sample = false;                // false: greedy, the first largest logit
  double temperature = 1.0;              // sampling: > 0, every logit is divided by it
  std::int64_t top_k = 0;                // sampling: >= 0; 0 (or >= the vocabulary) keeps every token
  double top_p = 1.0;                    // sampling: in (0, 1]; 1 keeps every token
  double min_p = 0.0;                    // sampling: in [0, 1]; keeps p >= min_p * the top p; 0 keeps every token
  double repetition_penalty = 1.0;       // > 0, greedy too; 1 changes nothing
  std::span<const std::int64_t> seen;    // the ids the penalty applies to (repeats count once)
  std::span<const std::int64_t> barred;  // ids whose logit is -inf first (eos before min_new_tokens)
  double uniform = 0.0;                  // sampling: the draw, in [0, 1)
};

// logits [rows, vocab] (float64, float32, bfloat16 or float16, any device; rows may be
// strided) -> the chosen id of each row, on the host. Ids in seen or barred outside the
// vocabulary are ignored, as the reference does.
std::vector<std::int64_t> sample_rows(const Tensor& logits, const std::vector<RowSampling>& rows);

// The CPU reference for one row: barred ids, repetition penalty, then the first argmax, or
// temperature, top-k, top-p, min-p, softmax and the first id whose cumulative probability (in id
// order) exceeds the draw; the argmax when rounding leaves the sum just below it.
std::int64_t sample_row(std::vector<double> logits, const RowSampling& row);

}  // namespace zt::ops
