// dst += src * factor with dst float32 and src any float dtype: gradient accumulation into
// fp32 buffers (micro-batches summed before the optimizer step) in one pass, no temporary.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

void accumulate_float32(float* dst, const void* src, DType src_dtype, std::int64_t n, float factor,
                        cudaStream_t stream);

}  // namespace zt::cuda
