// The caching device allocator. cudaMalloc and cudaFree are slow and cudaFree synchronises
// the device, so memory that tensors free is kept in pools and handed out again without
// asking the driver. Blocks are reused only on the stream they were allocated on; one also
// used on other streams (record_stream) is reused once those streams are done with it.
// Design and how to read the stats: docs/ALLOCATOR.md.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/error.h"
#include "runtime/memory/allocator_backend.h"
#include "runtime/memory/allocator_stats.h"
#include "runtime/memory/block_pool.h"

namespace zt {

struct BlockSnapshot {
  void* ptr = nullptr;
  std::size_t size = 0;
  BlockState state = BlockState::kFree;
};

struct SegmentSnapshot {
  void* base = nullptr;
  std::size_t size = 0;
  cudaStream_t stream = nullptr;
  bool small_pool = false;
  std::vector<BlockSnapshot> blocks;  // in address order, covering the segment
};

class CachingDeviceAllocator {
 public:
  explicit CachingDeviceAllocator(std::unique_ptr<AllocatorBackend> backend);
  ~CachingDeviceAllocator();  // gives every segment back, including ones still handed out
  CachingDeviceAllocator(const CachingDeviceAllocator&) = delete;
  CachingDeviceAllocator& operator=(const CachingDeviceAllocator&) = delete;

  // 0 bytes -> nullptr. Out of memory, even after emptying the cache -> zt::Error.
  void* allocate(std::size_t bytes, cudaStream_t stream);
  // nullptr is ignored; a pointer allocate() did not return, or one already freed -> zt::Error.
  void free(void* ptr);
  // The block of `ptr` is also used on `stream`: once freed, it waits for that stream's work.
  void record_stream(void* ptr, cudaStream_t stream);
  // Gives every cached segment no block of which is in use back to the device.
  void empty_cache();
  AllocatorStats stats() const;
  // Never reserve more than `bytes` of the device (runtime/memory/memory_limit.h); nullopt:
  // as much as the device gives.
  void set_memory_limit(std::optional<std::size_t> bytes);
  std::optional<std::size_t> memory_limit() const;
  void reset_peak_stats();                        // peaks become the current values
  std::vector<SegmentSnapshot> snapshot() const;  // by segment address

 private:
  struct PendingEvent {
    BackendEvent event;
    detail::Block* block;
  };

  detail::Block* obtain_block(std::size_t size, cudaStream_t stream);
  detail::Block* take_cached(std::size_t size, cudaStream_t stream);
  detail::Block* take_from_new_segment(std::size_t size, cudaStream_t stream);
  detail::BlockPool& pool_for(std::size_t size);
  detail::Block* find_active(void* ptr, const char* operation) const;
  void defer_until_streams_finish(detail::Block* block);
  void release_finished_blocks();
  void release_unused_segments();
  void release_all_segments();
  Error out_of_memory_error(std::size_t bytes) const;

  std::unique_ptr<AllocatorBackend> backend_;
  mutable std::mutex mutex_;
  detail::BlockPool small_pool_;
  detail::BlockPool large_pool_;
  std::unordered_map<void*, detail::Block*> active_;  // handed out, by address
  std::map<void*, detail::Block*> segments_;          // first block of each segment, by base
  std::vector<PendingEvent> pending_;
  AllocatorStats stats_;
  std::optional<std::size_t> memory_limit_;
};

// The allocator of CUDA device `device`, created on first use; safe to call from any thread.
// Throws zt::NoGpuError without a GPU and zt::Error for a device that does not exist.
CachingDeviceAllocator& device_allocator(int device);

}  // namespace zt
