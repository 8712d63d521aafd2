#include "cuda/common/multiprocessor_count.h"

#include "cuda/common/per_device_value.h"

namespace zt::cuda {

// Asked once per device: a decode step's launches size their grids by it.
int multiprocessor_count() {
  static std::array<std::atomic<int>, 64> known{};
  return per_device_value(known, [](int device) {
    int count = 0;
    ZT_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  });
}

}  // namespace zt::cuda
