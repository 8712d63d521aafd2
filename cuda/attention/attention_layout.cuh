// The packed layout of attention_contract.cuh as device code reads it, shared by the kernel
// families (simple/, flash/, hopper/, decode/): a sequence's token range, the inputs as the
// element type, the kv head a query head reads, row addressing with the prefix's rows first,
// the causal mask; and on the host, the check of the dims every family takes and the
// shared-memory opt-in of a launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda/attention/attention_contract.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda::attention_detail {

struct Sequence {
  std::int64_t start;
  int len;
};

__device__ __forceinline__ Sequence sequence(const std::int32_t* cu_seqlens, int b) {
  return {cu_seqlens[b], cu_seqlens[b + 1] - cu_seqlens[b]};
}

// The inputs as T.
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

// The kv head query head h reads (grouped-query attention).
__device__ __forceinline__ int kv_head(const AttentionDims& dims, int h) {
  return h / (dims.num_heads / dims.num_kv_heads);
}

// Row (token, head) of a [total_tokens, heads, head_dim] array.
template <typename P>
__device__ __forceinline__ P token_row(P base, std::int64_t token, int heads, int head, int head_dim) {
  return base + (token * heads + head) * head_dim;
}

// Unified key j of sequence b for kv head g: the prefix's rows first, then the sequence's tokens.
template <typename P>
__device__ __forceinline__ P key_row(P own, P prefix, const AttentionDims& dims, Sequence seq, int b, int j, int g) {
  if (j < dims.prefix_len)
    return prefix + ((static_cast<std::int64_t>(b) * dims.prefix_len + j) * dims.num_kv_heads + g) * dims.head_dim;
  return token_row(own, seq.start + (j - dims.prefix_len), dims.num_kv_heads, g, dims.head_dim);
}

// Whether the query at local position i sees unified key j; out-of-range rows see nothing.
__device__ __forceinline__ bool visible(const AttentionDims& dims, int len, int i, int j) {
  return i < len && j < dims.prefix_len + len && (!dims.causal || j < dims.prefix_len || j - dims.prefix_len <= i);
}

// Allows a kernel more than the default 48 KiB of dynamic shared memory when it needs it.
template <typename Kernel>
void allow_shared_bytes(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

inline void check_dims(const AttentionDims& dims) {
  ZT_REQUIRE(dims.head_dim >= 1 && dims.head_dim <= 256,
             "attention kernels: head_dim " + std::to_string(dims.head_dim) + " must be in 1 .. 256");
  ZT_REQUIRE(dims.num_kv_heads >= 1 && dims.num_heads % dims.num_kv_heads == 0,
             "attention kernels: num_heads " + std::to_string(dims.num_heads) + " must be a multiple of num_kv_heads " +
                 std::to_string(dims.num_kv_heads));
}

}  // namespace zt::cuda::attention_detail
