#include "cuda/common/hopper/hopper_support.h"

#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "cuda/common/per_device_value.h"
#include "runtime/check.h"
#include "runtime/device.h"

namespace zt::cuda::hopper {
namespace {

// Writes 1 only where it was compiled for sm_90a, the target that has wgmma and setmaxnreg.
__global__ void probe_kernel(int* answer) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *answer = 1;
#else
  *answer = 0;
#endif
}

bool probe(int device) {
  const DeviceProperties gpu = device_properties(device);
  if (gpu.compute_major != 9 || gpu.compute_minor != 0) return false;
  int* answer = nullptr;
  ZT_CUDA_CHECK(cudaMalloc(&answer, sizeof(int)));
  probe_kernel<<<1, 1>>>(answer);
  int host = 0;
  const cudaError_t launched = cudaGetLastError();
  if (launched == cudaSuccess) ZT_CUDA_CHECK(cudaMemcpy(&host, answer, sizeof(int), cudaMemcpyDeviceToHost));
  ZT_CUDA_CHECK(cudaFree(answer));
  return launched == cudaSuccess && host == 1;
}

}  // namespace

bool hopper_kernels_available() {
  static std::array<std::atomic<int>, 64> known{};
  return per_device_value(known, [](int device) { return probe(device) ? 1 : 0; }) == 1;
}

}  // namespace zt::cuda::hopper
