// Finds an index outside its table (a token id past the vocabulary, a label past the
// logits) on the device, so big index tensors never travel to the host. The answer is read
// back, which synchronises the stream: callers raise the error before any kernel uses it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// Position of the first of `count` indices (int32 or int64) that lies outside [0, limit)
// and differs from `ignore` (pass has_ignore = false to allow none), or -1 when all are valid.
std::int64_t first_index_out_of_range(const void* indices, DType dtype, std::int64_t count, std::int64_t limit,
                                      bool has_ignore, std::int64_t ignore, cudaStream_t stream);

}  // namespace zt::cuda
