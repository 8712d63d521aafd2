#include "runtime/device_clock.h"

#include <string>

#include <cuda_runtime_api.h>

#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt {

int sm_clock_khz(int device) {
  ZT_REQUIRE(device >= 0 && device < cuda_device_count(), "sm_clock_khz: no CUDA device " + std::to_string(device) +
                                                              " (" + std::to_string(cuda_device_count()) + " visible)");
  int khz = 0;
  ZT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  return khz;
}

}  // namespace zt
