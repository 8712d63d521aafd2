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

KeyMaps key_maps(const AttentionDims& dims, const AttentionInputs& in, DType dtype, int head_dim, int box_rows) {
  KeyMaps maps{};
  maps.k = rows_map(in.k, dtype, dims.total_tokens, dims.num_kv_heads, head_dim, box_rows);
  maps.v = rows_map(in.v, dtype, dims.total_tokens, dims.num_kv_heads, head_dim, box_rows);
  if (dims.prefix_len > 0) {
    const std::int64_t prefix_rows = static_cast<std::int64_t>(dims.batch) * dims.prefix_len;
    maps.prefix_k = rows_map(in.prefix_k, dtype, prefix_rows, dims.num_kv_heads, head_dim, box_rows);
    maps.prefix_v = rows_map(in.prefix_v, dtype, prefix_rows, dims.num_kv_heads, head_dim, box_rows);
  }
  return maps;
}

}  // namespace zt::cuda::hopper_detail
