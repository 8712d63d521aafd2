// Multi-tensor apply: one launch works on up to kMaxTensors tensors at once. Each tensor is
// cut into fixed-size chunks and every block takes one chunk; the table that says which
// tensor a block's chunk belongs to travels in the kernel's argument struct (so no copy to
// the device precedes the launch), and a block finds its tensor by binary search.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "runtime/check.h"

namespace zt::cuda {

// Tensors per launch: the tensors' descriptors and this index stay within 4 KiB of kernel
// arguments.
inline constexpr int kMaxTensorsPerLaunch = 48;

// Where each tensor's chunks start in the launch's chunk numbering.
struct ChunkIndex {
  int count = 0;                                   // tensors in the launch
  std::int32_t begin[kMaxTensorsPerLaunch + 1]{};  // begin[count] = chunks in the launch

  // The tensor whose chunks include `chunk` (the last with begin <= chunk).
  __device__ __forceinline__ int tensor_of(std::int32_t chunk) const {
    int lo = 0, hi = count - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (begin[mid] <= chunk)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
};

// Groups `members` (indices into the caller's tensor list) into launches of at most
// kMaxTensorsPerLaunch tensors, skipping tensors with no chunks, and calls
// launch(batch members, index) for each, in order.
template <typename Chunks, typename Launch>
void for_each_launch(const std::vector<std::size_t>& members, Chunks&& chunks_of, Launch&& launch) {
  std::vector<std::size_t> batch;
  ChunkIndex index;
  auto flush = [&] {
    if (batch.empty()) return;
    index.count = static_cast<int>(batch.size());
    launch(batch, index);
    batch.clear();
    index = ChunkIndex{};
  };
  for (std::size_t member : members) {
    std::int64_t chunks = chunks_of(member);
    if (chunks == 0) continue;
    if (batch.size() == kMaxTensorsPerLaunch) flush();
    int slot = static_cast<int>(batch.size());
    index.begin[slot + 1] = index.begin[slot] + static_cast<std::int32_t>(chunks);
    batch.push_back(member);
  }
  flush();
}

// for_each_launch over the caller's slots (its per-tensor launch descriptors): for each batch,
// a copy of `args` (the kernel's argument struct, with tensors[] and index) gets the batch's
// slots and index, and launch(args, blocks) runs with one block per chunk.
template <typename Args, typename Slot, typename ChunksOf, typename Launch>
void launch_slots(const std::vector<std::size_t>& members, const std::vector<Slot>& slots, const Args& args,
                  ChunksOf&& chunks_of, Launch&& launch) {
  for_each_launch(
      members, [&](std::size_t i) { return chunks_of(slots[i]); },
      [&](const std::vector<std::size_t>& batch, const ChunkIndex& index) {
        Args filled = args;
        for (std::size_t k = 0; k < batch.size(); ++k) filled.tensors[k] = slots[batch[k]];
        filled.index = index;
        launch(filled, static_cast<unsigned>(index.begin[index.count]));
        ZT_CUDA_CHECK(cudaGetLastError());
      });
}

// Leading elements to handle one by one so that p + head is aligned to `vector` elements of
// `element_bytes` each; -1 when p is not even element-aligned.
inline std::int64_t aligned_head(const void* p, std::size_t element_bytes, std::int64_t vector) {
  auto address = reinterpret_cast<std::uintptr_t>(p);
  if (address % element_bytes != 0) return -1;
  auto element = static_cast<std::int64_t>(address / element_bytes);
  return (vector - element % vector) % vector;
}

}  // namespace zt::cuda
