#include "cuda/common/multiprocessor_count.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>

#include "runtime/check.h"

namespace zt::cuda {

// Asked once per device: a decode step's launches size their grids by it.
int multiprocessor_count() {
  constexpr int kKnownDevices = 64;
  static std::array<std::atomic<int>, kKnownDevices> known{};
  int device = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  if (device < kKnownDevices)
    if (const int count = known[device].load(std::memory_order_relaxed); count > 0) return count;
  int count = 0;
  ZT_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  if (device < kKnownDevices) known[device].store(count, std::memory_order_relaxed);
  return count;
}

}  // namespace zt::cuda
