// The next token of every row of [rows, cols] logits, chosen on the device in float64 by
// transformers' rules, so that only the ids cross to the host: barred ids, repetition
// penalty, then the first argmax, or temperature, top-k, top-p, min-p, softmax and an inverse-CDF
// draw in id order. One block per row; the row lives in float64 scratch memory.
//
// Top-k is an exact radix select on order-preserving integer keys of the values; top-p is a
// radix select on the same keys weighted by each token's probability in 62-bit fixed point,
// with the tie group it ends in cut by id as a stable sort would; the draw is a prefix scan
// in id order. Every sum runs in an order fixed by the sizes, so a row gives the same token
// on every run. Where it can differ from the CPU reference: ops/sampling/sampling.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// One row's rules.
struct SamplingRule {
  double temperature = 1.0;         // sampling: every logit is divided by it
  double top_p = 1.0;               // sampling: < 1 keeps the smallest set of likeliest tokens reaching it
  double min_p = 0.0;               // sampling: > 0 drops tokens with exp(value - max) below it
  double repetition_penalty = 1.0;  // for the special tokens marked kPenalisedToken
  double uniform = 0.0;             // sampling: the draw, in [0, 1)
  std::int64_t top_k = 0;           // sampling: in 1 .. cols - 1 keeps the k largest and ties with the k-th
  std::int64_t special_begin = 0;   // this row's special tokens: specials[special_begin .. special_end)
  std::int64_t special_end = 0;
  std::int32_t do_sample = 0;  // 0: greedy
};

// A token a row treats apart: its logit is -inf (barred), then penalised; a row lists an id
// once, with both flags where both apply.
struct SpecialToken {
  std::int32_t id = 0;  // in 0 .. cols - 1
  std::int32_t flags = 0;
};
constexpr std::int32_t kBarredToken = 1;
constexpr std::int32_t kPenalisedToken = 2;

// logits: rows at logits + r * row_stride, dtype float64, float32, bfloat16 or float16; cols
// in 1 .. 2^31 - 1. rules[rows] and specials (as many as the rules cover) are host arrays,
// copied to the device here; out: int64 [rows] on the device.
void sample_rows(const void* logits, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                 const SamplingRule* rules, const SpecialToken* specials, std::int64_t* out, cudaStream_t stream);

}  // namespace zt::cuda
