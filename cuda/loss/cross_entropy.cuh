// Cross-entropy of contiguous logits [tokens, vocab] against integer labels, with float32
// log-sum-exp statistics for every dtype. Labels are int32 or int64 and already checked:
// each lies in [0, vocab) or equals ignore_index. One block per token row.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct CrossEntropyProblem {
  const void* logits = nullptr;
  DType dtype = DType::kF32;  // of logits (and of grad_logits)
  const void* labels = nullptr;
  DType label_dtype = DType::kI64;
  std::int64_t tokens = 0;
  std::int64_t vocab = 0;
  std::int64_t ignore_index = -100;
  bool mean = true;  // else sum
};

// logsumexp[t] = log sum_j exp(logits[t, j]) for every token (ignored ones too);
// valid_count[0] = tokens whose label is not ignore_index; loss[0] = sum over those tokens of
// logsumexp - logits[t, label], divided by valid_count for the mean (0 when none is valid).
void cross_entropy_forward(const CrossEntropyProblem& p, float* logsumexp, float* loss, std::int64_t* valid_count,
                           cudaStream_t stream);

// grad_logits[t, j] = (softmax(logits[t])[j] - (j == label)) * grad_loss[0], divided by
// valid_count[0] for the mean; zero rows for ignored tokens. All pointers are device memory.
void cross_entropy_backward(const CrossEntropyProblem& p, const float* grad_loss, const float* logsumexp,
                            const std::int64_t* valid_count, void* grad_logits, cudaStream_t stream);

}  // namespace zt::cuda
