// Where the caching device allocator gets its memory and events. The CUDA backend
// (cuda_allocator_backend.h) is the real one; HostAllocatorBackend (host_allocator_backend.h)
// stands in for it where there is no GPU, so the allocator's algorithm is testable anywhere.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "runtime/device.h"

namespace zt {

// An event handle, meaningful only to the backend that created it.
using BackendEvent = void*;

class AllocatorBackend {
 public:
  virtual ~AllocatorBackend() = default;

  virtual int device_index() const = 0;
  // `bytes` of device memory, or nullptr when the device has not that much left; any other
  // failure throws zt::Error.
  virtual void* allocate_segment(std::size_t bytes) = 0;
  virtual void free_segment(void* ptr) = 0;
  virtual MemoryInfo memory_info() = 0;

  virtual BackendEvent create_event() = 0;
  virtual void record_event(BackendEvent event, cudaStream_t stream) = 0;
  // True once the work queued on the stream before record_event() has finished.
  virtual bool event_completed(BackendEvent event) = 0;
  virtual void destroy_event(BackendEvent event) = 0;
};

}  // namespace zt
