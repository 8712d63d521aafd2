// A CUDA graph: the kernels and copies that some code queues on a stream, recorded once and
// replayed with one launch. A decode step of a small batch is hundreds of short kernels whose
// launch costs more than their work; replayed as a graph, the GPU runs them back to back.
// Replays read and write the very buffers the capture saw, so the caller keeps those alive
// and refills the inputs in place.
#pragma once

#include <functional>

#include <cuda_runtime_api.h>

#include "runtime/streams/cuda_handle.h"

namespace zt {

class CudaGraph {
 public:
  // Runs `body` with its work on `stream` (not the legacy default stream) recorded instead of
  // executed. Throws zt::Error, with the capture ended, when the work cannot be captured.
  static CudaGraph capture(cudaStream_t stream, const std::function<void()>& body);

  void replay(cudaStream_t stream) const;

 private:
  CudaGraph(cudaGraph_t graph, cudaGraphExec_t exec) : graph_(graph), exec_(exec) {}
  // Declared in this order, the executable graph is destroyed before the graph.
  CudaHandle<cudaGraph_t, cudaGraphDestroy> graph_;
  CudaHandle<cudaGraphExec_t, cudaGraphExecDestroy> exec_;
};

}  // namespace zt
