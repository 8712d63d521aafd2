#include "cuda/common/sm90_code.h"

#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "cuda/common/per_device_value.h"

namespace zt::cuda {
namespace {

// Never launched: its loaded PTX version is the build's for this device.
__global__ void ptx_version_probe_kernel() {}

}  // namespace

bool runs_sm90_code() {
  static std::array<std::atomic<int>, 64> known{};
  return per_device_value(known, [](int) {
           cudaFuncAttributes attributes{};
           ZT_CUDA_CHECK(cudaFuncGetAttributes(&attributes, ptx_version_probe_kernel));
           return attributes.ptxVersion >= 90 ? 1 : 0;
         }) == 1;
}

}  // namespace zt::cuda
