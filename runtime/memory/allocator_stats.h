// Counters kept by the caching allocators (device and pinned host). docs/ALLOCATOR.md says
// how to read them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zt {

struct AllocatorStats {
  std::size_t allocated_bytes = 0;       // in blocks handed out, sizes after rounding
  std::size_t reserved_bytes = 0;        // held from the device: allocated, cached and awaiting
  std::size_t peak_allocated_bytes = 0;  // since creation or the last reset_peak_stats()
  std::size_t peak_reserved_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t device_mallocs = 0;        // cudaMalloc (cudaHostAlloc for pinned memory) that succeeded
  std::uint64_t device_frees = 0;          // cudaFree (cudaFreeHost)
  std::uint64_t cache_hits = 0;            // allocations served from cached memory, with no device malloc
  std::size_t awaiting_streams_bytes = 0;  // freed, but not reusable until other streams finish
  std::size_t segments = 0;                // device allocations currently held
  std::uint64_t cache_flushes = 0;         // times running out of memory emptied the cache to retry
  std::uint64_t ooms = 0;                  // allocations that failed even after that retry
};

}  // namespace zt
