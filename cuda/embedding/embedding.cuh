// Embedding lookup and its gradient on raw pointers. weight and grad rows are contiguous
// [rows, hidden]; ids are int32 or int64 and already checked to lie in [0, vocab).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// out[t, :] = weight[ids[t], :] for t < tokens. `dtype` is the float dtype of weight and out.
void embedding_forward(const void* weight, const void* ids, DType id_dtype, void* out, DType dtype, std::int64_t tokens,
                       std::int64_t hidden, cudaStream_t stream);

// accumulator[ids[t], :] += grad[t, :] with float atomics: fast, but the summation order of
// repeated ids varies from run to run. `accumulator` is float32 [vocab, hidden], zeroed by
// the caller.
void embedding_backward_atomic(const void* grad, DType dtype, const void* ids, DType id_dtype, float* accumulator,
                               std::int64_t tokens, std::int64_t hidden, cudaStream_t stream);

// dweight[v, :] = sum of grad[t, :] over the tokens t with ids[t] = v, in increasing t, in
// float32, rounded once to `dtype`: the same bits on every run. Every row of dweight
// [vocab, hidden] is written (zeros for ids that never occur). Sorts (id, t) pairs with CUB
// and gives each vocabulary row a block that sums its run of the sorted list.
void embedding_backward_deterministic(const void* grad, DType dtype, const void* ids, DType id_dtype, void* dweight,
                                      std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
                                      cudaStream_t stream);

// The same sums in the same order added into a float32 sink [vocab, hidden] instead (rows of
// ids that never occur untouched): a trained table's gradient buffer, with no dense gradient.
void embedding_backward_deterministic_add(const void* grad, DType dtype, const void* ids, DType id_dtype, float* sink,
                                          std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
                                          cudaStream_t stream);

}  // namespace zt::cuda
