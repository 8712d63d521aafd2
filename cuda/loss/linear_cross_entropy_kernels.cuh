// The row kernels of the fused linear + cross-entropy, between its matrix products: the
// loss of each token of a chunk of logits, with the logits overwritten in place by their
// gradient; the count of labelled tokens; the loss's deterministic reduction; and the scaling
// of the saved gradients by the upstream gradient in backward.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// One chunk of logits [rows, vocab] of `logits_dtype`, row r at logits + r * ld_logits, with
// ld_logits a multiple of 8 and the buffer 16-byte aligned. When write_grad, each row is
// overwritten, from its first byte, by d(loss · grad_scale)/d(logits) of `grad_dtype`
// (logits_dtype, or a narrower type when the logits are float32): row r of the gradient
// starts where row r of the logits did, so its leading dimension in grad_dtype elements is
// ld_logits · sizeof(logits) / sizeof(grad).
struct ChunkLossArgs {
  void* logits = nullptr;
  DType logits_dtype = DType::kF32;
  std::int64_t ld_logits = 0;
  DType grad_dtype = DType::kF32;
  const void* labels = nullptr;  // this chunk's rows, int32 or int64, checked
  DType label_dtype = DType::kI64;
  std::int64_t rows = 0;
  std::int64_t vocab = 0;
  std::int64_t ignore_index = -100;
  bool mean = true;
  float grad_scale = 1.0f;
  const std::int64_t* valid_count = nullptr;  // device: labelled tokens of the whole batch
  float* token_loss = nullptr;                // [rows]: logsumexp - logit[label], 0 when ignored
  bool write_grad = false;
  // [rows] float32 or null: each row's loss and gradient multiplied by its weight (the
  // per-sequence factors of a preference loss).
  const float* token_weights = nullptr;
};
void chunk_loss_and_grad(const ChunkLossArgs& args, cudaStream_t stream);

// valid_count[0] = the tokens whose label is not ignore_index.
void count_valid_labels(const void* labels, DType label_dtype, std::int64_t tokens, std::int64_t ignore_index,
                        std::int64_t* valid_count, cudaStream_t stream);

// loss[0] = the sum of token_loss, divided by valid_count for the mean (0 when none is
// valid), added in a fixed order so the loss has the same bits every run.
void reduce_token_loss(const float* token_loss, std::int64_t tokens, bool mean, const std::int64_t* valid_count,
                       float* loss, cudaStream_t stream);

// dst[i] = src[i] · grad_loss[0] · factor in float32 (added to dst[i] when `accumulate`), for
// n elements; src is float32 or dst's dtype, grad_loss device memory.
void scale_gradient(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::int64_t n,
                    const float* grad_loss, float factor, bool accumulate, cudaStream_t stream);

}  // namespace zt::cuda
