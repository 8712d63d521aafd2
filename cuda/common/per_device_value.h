// A value asked of the CUDA runtime once per device and kept: what launches size themselves by
// (the SM count, whether a kernel was built with clusters), asked on every launch otherwise.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>

#include "runtime/check.h"

namespace zt::cuda {

// `known` holds, per device, 0 until asked, then the answer + 1 (answers are >= 0); devices past
// the first 64 ask each time.
template <typename Ask>
int per_device_value(std::array<std::atomic<int>, 64>& known, Ask ask) {
  int device = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  const bool kept = device < static_cast<int>(known.size());
  if (kept)
    if (const int stored = known[device].load(std::memory_order_relaxed); stored > 0) return stored - 1;
  const int answer = ask(device);
  if (kept) known[device].store(answer + 1, std::memory_order_relaxed);
  return answer;
}

}  // namespace zt::cuda
