// Fused linear + cross-entropy: loss = CE(hidden · weightᵀ, labels) without the
// [tokens, vocab] logits. Tokens go in chunks; each chunk's logits come from one GEMM, a row
// kernel turns them in place into their gradient while taking the loss, and two more GEMMs
// add the chunk's share of the hidden and weight gradients. Extra memory: one chunk of
// logits. See docs/FUSED_LOSS.md.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct LinearCrossEntropyProblem {
  const void* hidden = nullptr;  // [tokens, hidden_size], contiguous
  const void* weight = nullptr;  // [vocab, hidden_size], contiguous
  DType dtype = DType::kBF16;    // of hidden and weight: float32, bfloat16 or float16
  const void* labels = nullptr;  // [tokens] int32 or int64, each in [0, vocab) or ignore_index
  DType label_dtype = DType::kI64;
  std::int64_t tokens = 0;
  std::int64_t hidden_size = 0;
  std::int64_t vocab = 0;
  std::int64_t ignore_index = -100;
  bool mean = true;               // else sum
  float grad_scale = 1.0f;        // gradients are those of loss · grad_scale
  std::int64_t chunk_tokens = 0;  // >= 1
  bool float32_logits = true;     // a chunk's logits in float32, else in dtype
  // [tokens] float32 or null: the loss is sum (or mean) of weight · token loss, and each
  // token's gradient is multiplied by its weight.
  const float* token_weights = nullptr;
};

struct LinearCrossEntropyResult {
  float* loss = nullptr;                // device scalar
  std::int64_t* valid_count = nullptr;  // device scalar
  void* grad_hidden = nullptr;          // [tokens, hidden_size] of dtype, or null when not wanted
  float* grad_weight = nullptr;         // [vocab, hidden_size] float32, or null when not wanted
  float* token_loss = nullptr;          // [tokens] float32 (weighted), or null when not wanted
};

void linear_cross_entropy(const LinearCrossEntropyProblem& p, const LinearCrossEntropyResult& r, cudaStream_t stream);

// The chunk the op uses when the caller names none: as many tokens as keep one chunk's
// logits within 1 GiB when the weight's gradient is wanted, else 256 MiB (a multiple of 128
// when that many fit), at most `tokens`.
std::int64_t default_chunk_tokens(std::int64_t tokens, std::int64_t vocab, bool float32_logits, DType dtype,
                                  bool weight_gradient);

// Bytes of one chunk's logits buffer (rows padded to a multiple of 8 elements).
std::size_t chunk_logits_bytes(std::int64_t chunk_tokens, std::int64_t vocab, bool float32_logits, DType dtype);

}  // namespace zt::cuda
