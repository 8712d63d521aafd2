#include "runtime/stream.h"

#include <utility>

#include "runtime/check.h"
#include "runtime/device.h"

namespace zt {

Stream Stream::create(int priority) {
  require_gpu("creating a CUDA stream");
  cudaStream_t stream = nullptr;
  ZT_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
  return Stream(stream, true);
}

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), owned_(std::exchange(other.owned_, false)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    release();
    stream_ = std::exchange(other.stream_, nullptr);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

Stream::~Stream() { release(); }

void Stream::release() noexcept {
  if (owned_ && stream_ != nullptr) cudaStreamDestroy(stream_);
  stream_ = nullptr;
  owned_ = false;
}

void Stream::synchronize() const { ZT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

bool Stream::query() const {
  cudaError_t status = cudaStreamQuery(stream_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  ZT_CUDA_CHECK(status);
  return true;
}

Event::Event(bool timing) {
  require_gpu("creating a CUDA event");
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() { release(); }

void Event::release() noexcept {
  if (event_ != nullptr) cudaEventDestroy(event_);
  event_ = nullptr;
}

void Event::record(cudaStream_t stream) { ZT_CUDA_CHECK(cudaEventRecord(event_, stream)); }
void Event::wait_on(cudaStream_t stream) const { ZT_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }
void Event::synchronize() const { ZT_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool Event::query() const {
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  ZT_CUDA_CHECK(status);
  return true;
}

float Event::elapsed_ms(const Event& later) const {
  float ms = 0.0f;
  ZT_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, later.event_));
  return ms;
}

}  // namespace zt
