// Allocate+free pairs through the caching allocators against the raw CUDA calls they save.
// The host-backend runs measure the allocator's own bookkeeping and run anywhere; the
// device runs need a GPU and skip without one.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/host_allocator_backend.h"
#include "runtime/memory/pinned_allocator.h"

namespace zt {
namespace {

// Skips `state` without a GPU; with one, creates the CUDA context now, so that its start-up
// cost is not timed as the first allocation.
bool skip_without_gpu(benchmark::State& state) {
  if (!cuda_available()) {
    state.SkipWithError(("no CUDA GPU: " + cuda_unavailable_reason()).c_str());
    return true;
  }
  ZT_CUDA_CHECK(cudaFree(nullptr));
  return false;
}

// Awkward sizes across both pools: small, the small limit, shared large, own segment.
void pair_sizes(benchmark::internal::Benchmark* bench) {
  for (std::int64_t bytes : {512 + 3, 65536 + 7, 1 << 20, (3 << 20) + 5, (64 << 20) + 11}) bench->Arg(bytes);
}

// Pairs of allocate(bytes) and free(ptr) at state.range(0) bytes.
template <typename Allocate, typename Free>
void allocate_free_pairs(benchmark::State& state, Allocate&& allocate, Free&& free) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* ptr = allocate(bytes);
    benchmark::DoNotOptimize(ptr);
    free(ptr);
  }
  state.SetItemsProcessed(state.iterations());
}

// The same through a CUDA runtime call pair: allocate(&ptr, bytes) and free(ptr).
template <typename Allocate, typename Free>
void cuda_allocate_free_pairs(benchmark::State& state, Allocate&& allocate, Free&& free) {
  allocate_free_pairs(
      state,
      [&](std::size_t bytes) {
        void* ptr = nullptr;
        ZT_CUDA_CHECK(allocate(&ptr, bytes));
        return ptr;
      },
      [&](void* ptr) { ZT_CUDA_CHECK(free(ptr)); });
}

void allocate_free_pairs(benchmark::State& state, CachingDeviceAllocator& allocator) {
  allocate_free_pairs(
      state, [&](std::size_t bytes) { return allocator.allocate(bytes, nullptr); },
      [&](void* ptr) { allocator.free(ptr); });
}

void BM_CachingAllocatorHostBackend(benchmark::State& state) {
  CachingDeviceAllocator allocator(std::make_unique<HostAllocatorBackend>());
  allocate_free_pairs(state, allocator);
}
BENCHMARK(BM_CachingAllocatorHostBackend)->Apply(pair_sizes);

// Many live blocks of mixed sizes, so lookups search a populated free set and frees merge.
void BM_CachingAllocatorHostBackendMixed(benchmark::State& state) {
  CachingDeviceAllocator allocator(std::make_unique<HostAllocatorBackend>());
  const std::vector<std::size_t> sizes = {700, 4097, 33000, 250000, 1 << 20, (2 << 20) + 9, 5 << 20};
  std::vector<void*> live(64);
  for (auto _ : state) {
    for (std::size_t i = 0; i < live.size(); ++i) live[i] = allocator.allocate(sizes[i % sizes.size()], nullptr);
    for (std::size_t i = 0; i < live.size(); i += 2) allocator.free(live[i]);
    for (std::size_t i = 1; i < live.size(); i += 2) allocator.free(live[i]);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(live.size()));
}
BENCHMARK(BM_CachingAllocatorHostBackendMixed);

void BM_CachingAllocatorDevice(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  allocate_free_pairs(state, device_allocator(0));
}
BENCHMARK(BM_CachingAllocatorDevice)->Apply(pair_sizes);

void BM_CudaMallocFree(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  cuda_allocate_free_pairs(
      state, [](void** ptr, std::size_t bytes) { return cudaMalloc(ptr, bytes); }, cudaFree);
}
BENCHMARK(BM_CudaMallocFree)->Apply(pair_sizes);

void BM_PinnedHostAllocator(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  allocate_free_pairs(state, pinned_host_allocate, pinned_host_free);
}
BENCHMARK(BM_PinnedHostAllocator)->Apply(pair_sizes);

void BM_CudaHostAllocFree(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  cuda_allocate_free_pairs(
      state, [](void** ptr, std::size_t bytes) { return cudaHostAlloc(ptr, bytes, cudaHostAllocPortable); },
      cudaFreeHost);
}
BENCHMARK(BM_CudaHostAllocFree)->Apply(pair_sizes);

}  // namespace
}  // namespace zt
