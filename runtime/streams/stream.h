// RAII owners of CUDA streams and events. Both are move-only; the default stream is
// represented by a Stream that owns nothing (Stream::default_stream()).
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/streams/cuda_handle.h"

namespace zt {

class Stream {
 public:
  // A new non-blocking stream on the current device; `priority` follows CUDA (lower = higher).
  static Stream create(int priority = 0);
  static Stream default_stream() { return Stream(nullptr); }

  cudaStream_t get() const { return stream_.get(); }
  void synchronize() const;
  bool query() const;  // true when all work queued so far has finished

 private:
  explicit Stream(cudaStream_t stream) : stream_(stream) {}
  CudaHandle<cudaStream_t, cudaStreamDestroy> stream_;  // null: the default stream
};

class Event {
 public:
  // `timing` events can be timed with elapsed_ms; others are lighter, for ordering only.
  explicit Event(bool timing = false);

  cudaEvent_t get() const { return event_.get(); }
  void record(cudaStream_t stream);
  void wait_on(cudaStream_t stream) const;  // `stream` waits for this event
  void synchronize() const;
  bool query() const;
  float elapsed_ms(const Event& later) const;

 private:
  CudaHandle<cudaEvent_t, cudaEventDestroy> event_;
};

}  // namespace zt
