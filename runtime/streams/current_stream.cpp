#include "runtime/streams/current_stream.h"

#include "runtime/device.h"

namespace zt {
namespace {

thread_local cudaStream_t current = nullptr;

}  // namespace

cudaStream_t current_stream() { return current; }

StreamScope::StreamScope(cudaStream_t stream) : previous_(current) { current = stream; }

StreamScope::~StreamScope() { current = previous_; }

bool stream_is_capturing(cudaStream_t stream) {
  if (stream == nullptr || !cuda_available()) return false;  // the legacy stream is never captured
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
}

}  // namespace zt
