// Device memory simulated in host memory, so the caching allocator's whole algorithm runs,
// and is tested and benchmarked, where there is no GPU. Streams are plain handles here and
// events finish only when told to, which lets a test decide when "another stream" is done
// with a block. A capacity limit makes running out of memory reproducible.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "runtime/memory/allocator_backend.h"

namespace zt {

class HostAllocatorBackend final : public AllocatorBackend {
 public:
  static constexpr std::size_t kDefaultCapacity = std::size_t{1} << 40;

  explicit HostAllocatorBackend(std::size_t capacity = kDefaultCapacity, int device_index = 0);
  ~HostAllocatorBackend() override;  // frees whatever segments were not given back
  HostAllocatorBackend(const HostAllocatorBackend&) = delete;
  HostAllocatorBackend& operator=(const HostAllocatorBackend&) = delete;

  int device_index() const override { return device_index_; }
  void* allocate_segment(std::size_t bytes) override;  // nullptr beyond the capacity
  void free_segment(void* ptr) override;               // unknown pointer -> zt::Error
  MemoryInfo memory_info() override;                   // capacity minus segments held

  BackendEvent create_event() override;
  void record_event(BackendEvent event, cudaStream_t stream) override;
  bool event_completed(BackendEvent event) override;
  void destroy_event(BackendEvent event) override;

  // Every event recorded on `stream` so far completes, as when the stream's queue drains.
  void finish_work_on(cudaStream_t stream);
  void set_capacity(std::size_t bytes);
  std::size_t used_bytes() const;
  std::size_t live_segments() const;
  std::size_t live_events() const;

 private:
  struct HostEvent {
    cudaStream_t stream = nullptr;
    bool completed = true;  // an event never recorded counts as complete, as in CUDA
  };
  HostEvent& event_at(BackendEvent event);

  mutable std::mutex mutex_;
  std::size_t capacity_;
  int device_index_;
  std::size_t used_ = 0;
  std::unordered_map<void*, std::size_t> segments_;
  std::unordered_map<BackendEvent, std::unique_ptr<HostEvent>> events_;
};

}  // namespace zt
