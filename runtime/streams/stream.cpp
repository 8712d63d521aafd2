#include "runtime/streams/stream.h"

#include "runtime/check.h"
#include "runtime/device.h"

namespace zt {
namespace {

// What cudaStreamQuery and cudaEventQuery answer: false while work is pending (clearing the
// not-ready error they leave behind), true once it is done; any other error throws.
bool finished(cudaError_t status) {
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  ZT_CUDA_CHECK(status);
  return true;
}

}  // namespace

Stream Stream::create(int priority) {
  require_gpu("creating a CUDA stream");
  cudaStream_t stream = nullptr;
  ZT_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
  return Stream(stream);
}

void Stream::synchronize() const { ZT_CUDA_CHECK(cudaStreamSynchronize(get())); }

bool Stream::query() const { return finished(cudaStreamQuery(get())); }

Event::Event(bool timing) {
  require_gpu("creating a CUDA event");
  cudaEvent_t event = nullptr;
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  event_.reset(event);
}

void Event::record(cudaStream_t stream) { ZT_CUDA_CHECK(cudaEventRecord(get(), stream)); }
void Event::wait_on(cudaStream_t stream) const { ZT_CUDA_CHECK(cudaStreamWaitEvent(stream, get(), 0)); }
void Event::synchronize() const { ZT_CUDA_CHECK(cudaEventSynchronize(get())); }

bool Event::query() const { return finished(cudaEventQuery(get())); }

float Event::elapsed_ms(const Event& later) const {
  float ms = 0.0f;
  ZT_CUDA_CHECK(cudaEventElapsedTime(&ms, get(), later.get()));
  return ms;
}

}  // namespace zt
