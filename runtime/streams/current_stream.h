// The CUDA stream that ops launch on and allocate for, per thread. It is the legacy default
// stream unless a StreamScope names another for a while: a CUDA graph is captured on a
// stream of its own (the legacy stream cannot be captured), and everything the captured
// code launches or allocates must go there.
#pragma once

#include <cuda_runtime_api.h>

namespace zt {

cudaStream_t current_stream();

// Makes `stream` this thread's current stream until the scope ends.
class StreamScope {
 public:
  explicit StreamScope(cudaStream_t stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  cudaStream_t previous_;
};

// Whether `stream` is being captured into a CUDA graph: code that would read results back
// to the host (a check, a synchronisation) must not run then. False without a GPU.
bool stream_is_capturing(cudaStream_t stream);

}  // namespace zt
