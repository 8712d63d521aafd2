#include "cuda/common/hopper/hopper_support.h"

#include <cuda_runtime.h>

#include <mutex>
#include <vector>

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
  static std::mutex mutex;
  static std::vector<signed char> known;  // per device: -1 unknown, 0 no, 1 yes
  const int device = current_cuda_device();
  std::lock_guard<std::mutex> lock(mutex);
  if (known.size() <= static_cast<std::size_t>(device)) known.resize(device + 1, -1);
  if (known[device] < 0) known[device] = probe(device) ? 1 : 0;
  return known[device] == 1;
}

}  // namespace zt::cuda::hopper
