// The blocks of the caching device allocator and one pool of free ones: best-fit lookup in a
// set ordered by (stream, size, address), the split that serves a request from a larger
// block, and the merge that joins a freed block with its free neighbours. Not thread safe:
// CachingDeviceAllocator calls it under its lock.
#pragma once

#include <cstddef>
#include <set>
#include <vector>

#include <cuda_runtime_api.h>

namespace zt {

enum class BlockState { kAllocated, kFree, kAwaitingStreams };

namespace detail {

class BlockPool;

// Bytes inside one segment (one device malloc). A segment's blocks form a list in address
// order that covers it without gaps, so neighbours can be merged when both are free.
struct Block {
  char* ptr = nullptr;
  std::size_t size = 0;
  cudaStream_t stream = nullptr;  // the stream it was allocated on, the only one it is reused for
  BlockPool* pool = nullptr;
  BlockState state = BlockState::kFree;
  Block* prev = nullptr;
  Block* next = nullptr;
  std::vector<cudaStream_t> also_used_on;  // added by record_stream()
  int unfinished_events = 0;               // while kAwaitingStreams

  bool is_whole_segment() const { return prev == nullptr && next == nullptr; }
};

class BlockPool {
 public:
  // A block is split only when the part left over would be at least `min_split_remainder`.
  explicit BlockPool(std::size_t min_split_remainder) : min_split_remainder_(min_split_remainder) {}
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // The smallest free block of `stream` with room for `size` bytes, split down to `size` when
  // worth it and marked allocated; nullptr when none fits.
  Block* take(cudaStream_t stream, std::size_t size);
  // Marks `block` free, merges it with free neighbours (deleting those), and offers it.
  void insert_free(Block* block);
  // Removes the free blocks that span a whole segment, so their memory can go back.
  std::vector<Block*> take_unused_segments();

 private:
  struct StreamSizeAddressOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  void split_off_tail(Block* block, std::size_t size);

  std::size_t min_split_remainder_;
  std::set<Block*, StreamSizeAddressOrder> free_;
};

}  // namespace detail
}  // namespace zt
