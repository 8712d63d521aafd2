// The real allocator backend: cudaMalloc, cudaFree, cudaMemGetInfo and cudaEvent* on one
// device, made current around each call so callers may have any device selected.
#pragma once

#include <memory>

#include "runtime/memory/allocator_backend.h"

namespace zt {

// Throws zt::NoGpuError without a GPU and zt::Error for a device that does not exist.
std::unique_ptr<AllocatorBackend> make_cuda_allocator_backend(int device);

}  // namespace zt
