// What the persistent decode kernel's host side and device side agree on
// (persistent_decode.cu): where the workspace's and the dynamic shared memory's parts start,
// and how many warps share each weight stage's row pairs for a given grid. One definition each,
// so the host's allocation and launch and the kernel's pointers cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/decode_step/decode_stage_pieces.cuh"
#include "cuda/decode_step/persistent_decode.cuh"

namespace zt::cuda::decode_step {

// Where the workspace's parts start, in bytes: [rows, ...] each in the step's dtype (x, h, q/k/v,
// attention output, activation), each 256-byte aligned, then the argmax partials [kMaxGrid,
// rows]; `bytes` is the whole. One layout for the host's allocation and the kernel's pointers.
struct WorkspaceLayout {
  std::size_t x, h, qkv, attn, act, best_value, best_index, bytes;
};

__host__ __device__ inline WorkspaceLayout workspace_layout(const DecodeModelDims& d, int rows, std::size_t element) {
  const auto aligned = [&](std::int64_t elements) {
    return (static_cast<std::size_t>(elements * rows) * element + 255) / 256 * 256;
  };
  WorkspaceLayout l{};
  l.h = l.x + aligned(d.hidden);
  l.qkv = l.h + aligned(d.hidden);
  l.attn = l.qkv + aligned(static_cast<std::int64_t>(d.heads + 2 * d.kv_heads) * d.head_dim);
  l.act = l.attn + aligned(static_cast<std::int64_t>(d.heads) * d.head_dim);
  l.best_value = l.act + aligned(d.ffn);
  l.best_index = l.best_value + static_cast<std::size_t>(kMaxGrid) * rows * sizeof(float);
  l.bytes = l.best_index + static_cast<std::size_t>(kMaxGrid) * rows * sizeof(int);
  return l;
}

// The workspace's parts as the kernel uses them.
template <typename T>
struct Buffers {
  T *x, *h, *qkv, *attn, *act;
  float* best_value;
  int* best_index;
};

template <typename T>
__device__ Buffers<T> carve(void* memory, const DecodeModelDims& d, int rows) {
  const WorkspaceLayout l = workspace_layout(d, rows, sizeof(T));
  char* base = static_cast<char*>(memory);
  return {reinterpret_cast<T*>(base + l.x),           reinterpret_cast<T*>(base + l.h),
          reinterpret_cast<T*>(base + l.qkv),         reinterpret_cast<T*>(base + l.attn),
          reinterpret_cast<T*>(base + l.act),         reinterpret_cast<float*>(base + l.best_value),
          reinterpret_cast<int*>(base + l.best_index)};
}

// Warps per team (decode_step::Team) in each weight stage: q/k/v, the two with `hidden` output
// rows (output projection, down), gate/up, the LM head.
struct StageSplits {
  int qkv = 1, hidden_rows = 1, gate_up = 1, head = 1;
};

// The most warps per team (a power of two up to kWarps) that still leave every team of the
// grid a pair of rows; one without split_columns.
inline StageSplits stage_splits(const DecodeModelDims& d, unsigned grid) {
  const std::int64_t warps = static_cast<std::int64_t>(grid) * kWarps;
  const auto for_pairs = [&](std::int64_t pairs) {
    int splits = 1;
    while (d.split_columns && splits < kWarps && pairs * splits * 2 <= warps) splits *= 2;
    return splits;
  };
  const std::int64_t qkv_rows = static_cast<std::int64_t>(d.heads + 2 * d.kv_heads) * d.head_dim;
  return {for_pairs((qkv_rows + 1) / 2), for_pairs((d.hidden + 1) / 2), for_pairs(d.ffn), for_pairs((d.vocab + 1) / 2)};
}

// Where the dynamic shared memory's parts start, in bytes: the normalised rows from 0, the LM
// head's per-warp argmax, the teams' partial sums; the attention stage's head scratch
// (HeadScratch) reuses it from 0. bytes: the whole.
struct SharedLayout {
  std::size_t argmax, partials, bytes;
};

__host__ __device__ inline SharedLayout shared_layout(const DecodeModelDims& d, int rows, std::size_t element) {
  SharedLayout l{};
  l.argmax = static_cast<std::size_t>(rows) * d.hidden * element + 64;
  l.partials = l.argmax + 2 * static_cast<std::size_t>(kWarps) * rows * sizeof(float);
  const std::size_t stages = l.partials + 2 * static_cast<std::size_t>(kWarps) * rows * sizeof(float);
  const std::size_t head = HeadScratch::floats(d.head_dim) * sizeof(float);
  l.bytes = stages > head ? stages : head;
  return l;
}

}  // namespace zt::cuda::decode_step
