// The few kernels the tensor layer itself needs: strided copy with dtype conversion (which
// also implements fill, through a broadcast scalar), arange, and Philox random fills.
// They take raw pointers and layouts, not Tensors, like every kernel of the project.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::kernels {

inline constexpr int kMaxDims = 12;

// Element layout: base pointer already includes the storage offset.
struct StridedLayout {
  int ndim = 0;
  std::int64_t shape[kMaxDims] = {};
  std::int64_t strides[kMaxDims] = {};
};

void strided_copy(const void* src, DType src_dtype, const StridedLayout& src_layout, void* dst, DType dst_dtype,
                  const StridedLayout& dst_layout, std::int64_t numel, cudaStream_t stream);

void arange(void* dst, DType dtype, double start, double step, std::int64_t n, cudaStream_t stream);

enum class Distribution { kUniform, kNormal };
// dst[i] = shift + scale * philox_{uniform|normal}(seed, offset, i), computed in float with fma.
void philox_fill(void* dst, DType dtype, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                 Distribution distribution, float scale, float shift, cudaStream_t stream);

}  // namespace zt::kernels
