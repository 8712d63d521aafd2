// Temporary device memory for one kernel launch or library call, from the current device's
// caching allocator. Freeing right after the work is queued is safe: the allocator hands a
// block out again only on the stream it was allocated for, so later use queues behind it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "runtime/check.h"
#include "runtime/memory/caching_allocator.h"

namespace zt::cuda {

class ScratchBuffer {
 public:
  ScratchBuffer(std::size_t bytes, cudaStream_t stream) {
    ZT_CUDA_CHECK(cudaGetDevice(&device_));
    data_ = device_allocator(device_).allocate(bytes, stream);
  }
  ~ScratchBuffer() { device_allocator(device_).free(data_); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  int device_ = 0;
  void* data_ = nullptr;
};

}  // namespace zt::cuda
