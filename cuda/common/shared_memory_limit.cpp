#include "cuda/common/shared_memory_limit.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <limits>

#include "runtime/check.h"

namespace zt::cuda {
namespace {

std::atomic<std::size_t> cap{std::numeric_limits<std::size_t>::max()};

}  // namespace

// A driver attribute lookup, cheap beside the cudaFuncSetAttribute every such launch makes.
std::size_t block_shared_memory_limit() {
  int device = 0, bytes = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  ZT_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return std::min(static_cast<std::size_t>(bytes), cap.load());
}

SharedMemoryLimitCap::SharedMemoryLimitCap(std::size_t bytes) : previous_(cap.exchange(bytes)) {}

SharedMemoryLimitCap::~SharedMemoryLimitCap() { cap.store(previous_); }

}  // namespace zt::cuda
