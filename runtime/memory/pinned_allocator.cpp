#include "runtime/memory/pinned_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda_runtime_api.h>

#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/terminal/byte_format.h"

namespace zt {
namespace {

constexpr std::size_t kSmallestSizeClass = 4096;
constexpr std::size_t kLargestSizeClass = std::size_t{1} << (std::numeric_limits<std::size_t>::digits - 1);

std::size_t size_class_for(std::size_t bytes) { return std::bit_ceil(std::max(bytes, kSmallestSizeClass)); }

class PinnedHostCache {
 public:
  void* allocate(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    if (bytes > kLargestSizeClass) fail_out_of_memory(bytes);
    const std::size_t size = size_class_for(bytes);
    void* ptr = obtain(size);
    if (ptr == nullptr) fail_out_of_memory(bytes);
    in_use_.emplace(address(ptr), size);
    stats_.allocated_bytes += size;
    ++stats_.allocations;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return ptr;
  }

  void free(void* ptr) {
    std::lock_guard lock(mutex_);
    auto it = in_use_.find(address(ptr));
    if (it == in_use_.end()) {
      std::ostringstream message;
      message << "pinned_host_free(" << ptr
              << "): the pointer was not returned by pinned_host_allocate(), or was already freed";
      throw Error(message.str());
    }
    cached_[it->second].push_back(ptr);
    stats_.allocated_bytes -= it->second;
    ++stats_.frees;
    in_use_.erase(it);
  }

  bool contains(const void* ptr) const {
    std::lock_guard lock(mutex_);
    auto after = in_use_.upper_bound(address(ptr));
    if (after == in_use_.begin()) return false;
    auto block = std::prev(after);
    return address(ptr) < block->first + block->second;
  }

  AllocatorStats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void empty_cache() {
    std::lock_guard lock(mutex_);
    release_cached();
  }

 private:
  static std::uintptr_t address(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr); }

  void* obtain(std::size_t size) {
    if (void* cached = take_cached(size)) return cached;
    if (void* fresh = host_alloc(size)) return fresh;
    release_cached();
    ++stats_.cache_flushes;
    return host_alloc(size);
  }

  void* take_cached(std::size_t size) {
    auto it = cached_.find(size);
    if (it == cached_.end() || it->second.empty()) return nullptr;
    void* ptr = it->second.back();
    it->second.pop_back();
    ++stats_.cache_hits;
    return ptr;
  }

  // nullptr when the system has no more memory to lock.
  void* host_alloc(std::size_t size) {
    void* ptr = nullptr;
    // Portable: usable by every device's context, as in-process ranks on several GPUs need.
    cudaError_t status = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    ZT_CUDA_CHECK(status);
    stats_.reserved_bytes += size;
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    ++stats_.segments;
    ++stats_.device_mallocs;
    return ptr;
  }

  void release_cached() {
    for (auto& [size, blocks] : cached_) {
      for (void* ptr : blocks) {
        ZT_CUDA_CHECK(cudaFreeHost(ptr));
        stats_.reserved_bytes -= size;
        --stats_.segments;
        ++stats_.device_frees;
      }
      blocks.clear();
    }
  }

  [[noreturn]] void fail_out_of_memory(std::size_t bytes) {
    ++stats_.ooms;
    throw Error("could not allocate " + format_bytes(bytes) + " of pinned host memory, with " +
                format_bytes(stats_.allocated_bytes) +
                " pinned and in use by this process: the "
                "machine has no more memory to pin. Keep less staged in host memory, for example "
                "with less optimizer offload or a smaller batch.");
  }

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> in_use_;                // base -> size class, ordered for interior lookups
  std::unordered_map<std::size_t, std::vector<void*>> cached_;  // size class -> free blocks
  AllocatorStats stats_;
};

// Never destroyed: the CUDA runtime may be unloaded before static destructors run.
PinnedHostCache& pinned_cache() {
  static auto* cache = new PinnedHostCache;
  return *cache;
}

}  // namespace

void* pinned_host_allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  require_gpu("allocating pinned host memory");
  return pinned_cache().allocate(bytes);
}

void pinned_host_free(void* ptr) {
  if (ptr == nullptr) return;
  pinned_cache().free(ptr);
}

bool is_pinned_host_pointer(const void* ptr) { return ptr != nullptr && pinned_cache().contains(ptr); }

AllocatorStats pinned_host_stats() { return pinned_cache().stats(); }

void pinned_host_empty_cache() { pinned_cache().empty_cache(); }

}  // namespace zt
