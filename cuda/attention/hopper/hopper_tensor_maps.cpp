#include "cuda/attention/hopper/hopper_tensor_maps.h"

#include "cuda/common/hopper/tensor_map.h"

namespace zt::cuda::hopper_detail {

CUtensorMap rows_map(const void* base, DType dtype, std::int64_t rows, int heads, int head_dim, int box_rows) {
  hopper::TensorMapShape shape;
  shape.size0 = static_cast<std::uint64_t>(head_dim);
  shape.size1 = static_cast<std::uint64_t>(heads);
  shape.size2 = static_cast<std::uint64_t>(rows);
  shape.stride1_bytes = static_cast<std::uint64_t>(head_dim) * dtype_size(dtype);
  shape.stride2_bytes = static_cast<std::uint64_t>(heads) * head_dim * dtype_size(dtype);
  shape.box_rows = static_cast<std::uint32_t>(box_rows);
  return hopper::make_tensor_map(base, dtype, shape);
}

}  // namespace zt::cuda::hopper_detail
