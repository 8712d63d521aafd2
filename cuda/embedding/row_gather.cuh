// Rows of a [rows, width] matrix picked by up to two int32 indices and summed:
//   out[n, :] = sum over k of (index_k[n] >= 0 ? x[index_k[n], :] : 0)
// in float, rounded once to x's dtype (one index: a plain copy, the same bits). What a shared
// prefix's gather and its backward run (ops/embedding/row_gather.h): the backward of a gather
// that reads a row twice is the sum of the two rows that read it, so no atomics are needed and
// the result is the same on every run. Indices are checked on the host by the caller.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// second may be null (one index). x and out are contiguous, of `dtype`.
void gather_rows_summed(const void* x, const std::int32_t* first, const std::int32_t* second, void* out,
                        std::int64_t out_rows, std::int64_t width, DType dtype, cudaStream_t stream);

}  // namespace zt::cuda
