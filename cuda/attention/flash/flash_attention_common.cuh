// Pieces the tensor-core attention kernels share: the packed layout's addressing (from
// attention_tiles.cuh), where a lane's accumulator entries lie, masking, and the host-side
// dispatch over dtype and head_dim.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "cuda/attention/simple/attention_tiles.cuh"
#include "cuda/common/mma_warp.cuh"
#include "cuda/common/tile_smem.cuh"
#include "runtime/error.h"

namespace zt::cuda::flash_detail {

using attention_detail::allow_shared_bytes;
using attention_detail::key_row;
using attention_detail::Sequence;
using attention_detail::sequence;
using attention_detail::token_row;
using attention_detail::visible;
using mma::FragA;
using mma::FragC;

inline constexpr float kLog2e = 1.4426950408889634f;

__host__ __device__ constexpr int tiles_of(int n, int tile) { return (n + tile - 1) / tile; }

// A lane holds rows `group` and `group + 8` of its warp's 16-row accumulator slab, columns
// 2·quad and 2·quad + 1 of each 8-column n-block.
struct AccLane {
  int group, quad;
  __device__ __forceinline__ AccLane() : group((threadIdx.x % 32) / 4), quad(threadIdx.x % 4) {}
  __device__ __forceinline__ int row(int e) const { return group + 8 * (e / 2); }
  __device__ __forceinline__ int col(int n, int e) const { return 8 * n + 2 * quad + (e & 1); }
};

// Sets the entries of a warp's accumulators (rows from row0, columns from col0) that
// keep(row, col) rejects to `value`.
template <int kN8, typename Keep>
__device__ __forceinline__ void mask_accumulators(FragC (&c)[kN8], int row0, int col0, Keep&& keep, float value) {
  const AccLane lane;
#pragma unroll
  for (int n = 0; n < kN8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (!keep(row0 + lane.row(e), col0 + lane.col(n, e))) c[n].x[e] = value;
}

template <typename T>
struct Operands {
  const T *q, *k, *v, *prefix_k, *prefix_v;
  __device__ explicit Operands(const AttentionInputs& in)
      : q(static_cast<const T*>(in.q)),
        k(static_cast<const T*>(in.k)),
        v(static_cast<const T*>(in.v)),
        prefix_k(static_cast<const T*>(in.prefix_k)),
        prefix_v(static_cast<const T*>(in.prefix_v)) {}
};

inline bool flash_head_dim(int head_dim) { return head_dim == 64 || head_dim == 96 || head_dim == 128; }

// Calls f.template operator()<T, kHeadDim>() for a dtype and head_dim the kernels cover.
template <typename F>
void dispatch_flash(DType dtype, int head_dim, F&& f) {
  auto with_type = [&]<typename T>() {
    switch (head_dim) {
      case 64: return f.template operator()<T, 64>();
      case 96: return f.template operator()<T, 96>();
      case 128: return f.template operator()<T, 128>();
      default:
        throw Error("flash attention kernels: head_dim " + std::to_string(head_dim) +
                    " is not one of 64, 96, 128; use the simple kernels of cuda/attention/simple/attention.cuh");
    }
  };
  switch (dtype) {
    case DType::kBF16: return with_type.template operator()<__nv_bfloat16>();
    case DType::kF16: return with_type.template operator()<__half>();
    default:
      throw Error(std::string("flash attention kernels take bfloat16 or float16, got ") + dtype_name(dtype) +
                  "; use the simple kernels of cuda/attention/simple/attention.cuh");
  }
}

}  // namespace zt::cuda::flash_detail
