// Library handles (cuDNN, cuBLASLt) cached one per device and thread: a handle is bound to the
// device current when it is created, and is not meant to be shared between threads.
#pragma once

#include <cuda_runtime_api.h>

#include <unordered_map>

#include "runtime/check.h"

namespace zt::cuda {

// The calling thread's handle for the current device, made by create(device) the first time
// and destroyed with Destroy when the thread ends.
template <typename Handle, auto Destroy, typename Create>
Handle handle_for_current_device(Create&& create) {
  struct Handles {
    std::unordered_map<int, Handle> by_device;
    ~Handles() {
      // At process exit the driver may already be gone; nothing useful can be done on failure.
      for (auto& entry : by_device) Destroy(entry.second);
    }
  };
  thread_local Handles handles;
  int device = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  auto found = handles.by_device.find(device);
  if (found != handles.by_device.end()) return found->second;
  Handle handle = create(device);
  handles.by_device.emplace(device, handle);
  return handle;
}

}  // namespace zt::cuda
