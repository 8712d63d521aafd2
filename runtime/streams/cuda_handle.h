// Owners of CUDA runtime objects (streams, events, graphs): a std::unique_ptr whose deleter is
// the runtime's destroy call, so an owner is move-only, leaves null behind when moved from,
// and destroys a non-null handle once.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <type_traits>

namespace zt {

template <typename Handle, cudaError_t (*Destroy)(Handle)>
struct CudaDestroy {
  void operator()(Handle handle) const noexcept { Destroy(handle); }
};

template <typename Handle, cudaError_t (*Destroy)(Handle)>
using CudaHandle = std::unique_ptr<std::remove_pointer_t<Handle>, CudaDestroy<Handle, Destroy>>;

}  // namespace zt
