// Page-locked (pinned) host memory, which the GPU reads and writes directly, so copies from
// and to it are faster and can be asynchronous. cudaHostAlloc is far slower than malloc, so
// freed blocks are cached by size class (powers of two from 4 KiB) and handed out again.
// The cache does not track streams: free a block only once no copy still uses it, for
// example after synchronising the stream that copied it.
#pragma once

#include <cstddef>

#include "runtime/memory/allocator_stats.h"

namespace zt {

// 0 bytes -> nullptr. Without a usable GPU -> zt::NoGpuError; out of pinned memory, even
// after emptying the cache -> zt::Error.
void* pinned_host_allocate(std::size_t bytes);
// nullptr is ignored; a pointer not from pinned_host_allocate, or already freed -> zt::Error.
void pinned_host_free(void* ptr);
// True when `ptr` points into a block handed out by pinned_host_allocate and not yet freed.
bool is_pinned_host_pointer(const void* ptr);
// allocated/reserved bytes count whole size classes; device_mallocs and device_frees count
// cudaHostAlloc and cudaFreeHost calls.
AllocatorStats pinned_host_stats();
// Gives every cached (free) block back with cudaFreeHost.
void pinned_host_empty_cache();

}  // namespace zt
