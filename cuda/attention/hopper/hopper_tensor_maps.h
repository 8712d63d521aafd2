// The tensor maps the Hopper kernels reach the packed layout through: a [rows][heads][head_dim]
// array (q, k, v, dO, or a prefix's [batch · prefix_len][kv_heads][head_dim]) in boxes of
// box_rows rows of one head, 64 columns at a time (cuda/common/hopper/tensor_map.h).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda::hopper_detail {

CUtensorMap rows_map(const void* base, DType dtype, std::int64_t rows, int heads, int head_dim, int box_rows);

}  // namespace zt::cuda::hopper_detail
