#include "runtime/streams/cuda_graph.h"

#include <string>

#include "runtime/check.h"
#include "runtime/error.h"

namespace zt {

CudaGraph CudaGraph::capture(cudaStream_t stream, const std::function<void()>& body) {
  ZT_REQUIRE(stream != nullptr, "CUDA graph: the legacy default stream cannot be captured; use a stream of its own");
  // Relaxed: the caching allocator may still have to ask the driver for a segment.
  ZT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  cudaGraph_t graph = nullptr;
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // the failed capture leaves its error behind
    throw;
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess) {
    cudaGetLastError();
    fail(std::string("CUDA graph capture failed: ") + cudaGetErrorString(ended) +
         " (the captured code synchronised or used another stream)");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  if (instantiated != cudaSuccess) {
    cudaGraphDestroy(graph);
    cudaGetLastError();
    fail(std::string("CUDA graph instantiation failed: ") + cudaGetErrorString(instantiated));
  }
  return CudaGraph(graph, exec);
}

void CudaGraph::replay(cudaStream_t stream) const { ZT_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream)); }

}  // namespace zt
