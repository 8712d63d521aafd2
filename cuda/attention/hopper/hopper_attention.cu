#include "cuda/attention/hopper/hopper_attention.cuh"

#include "cuda/attention/flash/flash_attention.cuh"
#include "cuda/common/hopper/hopper_support.h"

namespace zt::cuda {

// What the Ampere kernels take (dtype, scale, 16-byte rows), at the head dims with Hopper code.
bool hopper_attention_supported(const AttentionDims& dims, DType dtype, std::initializer_list<const void*> pointers) {
  return (dims.head_dim == 64 || dims.head_dim == 128) && flash_attention_supported(dims, dtype, pointers) &&
         hopper::hopper_kernels_available();
}

}  // namespace zt::cuda
