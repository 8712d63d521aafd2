#include "cuda/attention/flash/flash_attention.cuh"

#include <cstdint>

#include "cuda/attention/flash/flash_attention_common.cuh"

namespace zt::cuda {

bool flash_attention_supported(const AttentionDims& dims, DType dtype, std::initializer_list<const void*> pointers) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) return false;
  if (!flash_detail::flash_head_dim(dims.head_dim) || !(dims.softmax_scale > 0.0f)) return false;
  for (const void* p : pointers)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

}  // namespace zt::cuda
