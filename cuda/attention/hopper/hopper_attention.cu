#include "cuda/attention/hopper/hopper_attention.cuh"

#include <cstdint>

#include "cuda/common/hopper/hopper_support.h"

namespace zt::cuda {

bool hopper_attention_supported(const AttentionDims& dims, DType dtype, std::initializer_list<const void*> pointers) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) return false;
  if ((dims.head_dim != 64 && dims.head_dim != 128) || !(dims.softmax_scale > 0.0f)) return false;
  for (const void* p : pointers)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return hopper::hopper_kernels_available();
}

}  // namespace zt::cuda
