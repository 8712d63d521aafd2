// dst += src * factor, the sum taken in float32 and rounded to dst's dtype once, src any float
// dtype: gradient accumulation across micro-batches into fp32 buffers, and into the 16-bit
// gradient partitions of ZeRO (DeepSpeed's default grad_accum_dtype), in one pass with no
// temporary.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

void accumulate(void* dst, DType dst_dtype, const void* src, DType src_dtype, std::int64_t n, float factor,
                cudaStream_t stream);

}  // namespace zt::cuda
