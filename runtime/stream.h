// RAII owners of CUDA streams and events. Both are move-only; the default stream is
// represented by a Stream that owns nothing (Stream::default_stream()).
#pragma once

#include <cuda_runtime_api.h>

namespace zt {

class Stream {
 public:
  // A new non-blocking stream on the current device; `priority` follows CUDA (lower = higher).
  static Stream create(int priority = 0);
  static Stream default_stream() { return Stream(nullptr, false); }

  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  cudaStream_t get() const { return stream_; }
  void synchronize() const;
  bool query() const;  // true when all work queued so far has finished

 private:
  Stream(cudaStream_t stream, bool owned) : stream_(stream), owned_(owned) {}
  void release() noexcept;
  cudaStream_t stream_ = nullptr;
  bool owned_ = false;
};

class Event {
 public:
  // `timing` events can be timed with elapsed_ms; others are lighter, for ordering only.
  explicit Event(bool timing = false);
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);
  void wait_on(cudaStream_t stream) const;  // `stream` waits for this event
  void synchronize() const;
  bool query() const;
  float elapsed_ms(const Event& later) const;

 private:
  void release() noexcept;
  cudaEvent_t event_ = nullptr;
};

}  // namespace zt
