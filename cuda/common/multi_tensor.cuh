// Multi-tensor apply: one launch works on up to kMaxTensors tensors at once. Each tensor is
// cut into fixed-size chunks and every block takes one chunk; the table that says which
// tensor a block's chunk belongs to travels in the kernel's argument struct (so no copy to
// the device precedes the launch), and a block finds its tensor by binary search.
#pragma once

#include <cstdint>
#include <vector>

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
      if (begin[mid] <= chunk) lo = mid;
      else hi = mid - 1;
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

// Leading elements to handle one by one so that p + head is aligned to `vector` elements of
// `element_bytes` each; -1 when p is not even element-aligned.
inline std::int64_t aligned_head(const void* p, std::size_t element_bytes, std::int64_t vector) {
  auto address = reinterpret_cast<std::uintptr_t>(p);
  if (address % element_bytes != 0) return -1;
  auto element = static_cast<std::int64_t>(address / element_bytes);
  return (vector - element % vector) % vector;
}

}  // namespace zt::cuda
