// The tensor maps the Hopper kernels reach the packed layout through: a [rows][heads][head_dim]
// array (q, k, v, dO, or a prefix's [batch · prefix_len][kv_heads][head_dim]) in boxes of
// box_rows rows of one head, 64 columns at a time (cuda/common/hopper/tensor_map.h).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cuda/attention/attention_contract.cuh"
#include "runtime/dtype.h"

namespace zt::cuda::hopper_detail {

CUtensorMap rows_map(const void* base, DType dtype, std::int64_t rows, int heads, int head_dim, int box_rows);

// The key side of a problem, in boxes of box_rows keys: k and v, and the prefix's (zero maps
// without a prefix).
struct KeyMaps {
  CUtensorMap k, v, prefix_k, prefix_v;
};
KeyMaps key_maps(const AttentionDims& dims, const AttentionInputs& in, DType dtype, int head_dim, int box_rows);

}  // namespace zt::cuda::hopper_detail
