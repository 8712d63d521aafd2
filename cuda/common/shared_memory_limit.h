// How much shared memory one block may use on the GPU a kernel runs on. The tensor-core
// attention kernels size their tiles for Hopper and A100 (up to 227 and 163 KiB a block); on
// sm_86 and sm_89 (A10, A40, L40, RTX 30xx/40xx) a block gets at most 99 KiB, and a kernel
// whose best tile needs more launches a smaller one there (cuda/attention/flash/).
#pragma once

#include <cstddef>

namespace zt::cuda {

// The least any supported GPU gives one block (sm_86/89's opt-in limit): a tile within it runs
// everywhere, and needs no second, smaller variant.
inline constexpr std::size_t kSmallestBlockSharedMemory = 99 * 1024;

// The dynamic shared memory a block may opt into on the current device
// (cudaDevAttrMaxSharedMemoryPerBlockOptin).
std::size_t block_shared_memory_limit();

// Lowers block_shared_memory_limit() to `bytes` while it lives, so tests on a large GPU run the
// tiles a smaller one gets. For tests; caps do not nest across threads.
class SharedMemoryLimitCap {
 public:
  explicit SharedMemoryLimitCap(std::size_t bytes);
  ~SharedMemoryLimitCap();
  SharedMemoryLimitCap(const SharedMemoryLimitCap&) = delete;
  SharedMemoryLimitCap& operator=(const SharedMemoryLimitCap&) = delete;

 private:
  std::size_t previous_;
};

}  // namespace zt::cuda
