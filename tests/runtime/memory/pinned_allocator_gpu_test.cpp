// The pinned host allocator. It shares one process-wide cache, so tests compare counters
// before and after rather than expecting absolute values.
#include "runtime/memory/pinned_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/streams/stream.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

char* as_bytes(void* ptr) { return static_cast<char*>(ptr); }

TEST(PinnedAllocator, WithoutGpuAllocatingThrowsNoGpuError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(pinned_host_allocate(5000), NoGpuError);
}

TEST(PinnedAllocator, ZeroBytesNullptrAndForeignPointers) {
  EXPECT_EQ(pinned_host_allocate(0), nullptr);
  pinned_host_free(nullptr);
  int local = 0;
  EXPECT_FALSE(is_pinned_host_pointer(&local));
  EXPECT_FALSE(is_pinned_host_pointer(nullptr));
  EXPECT_THROW(pinned_host_free(&local), Error);
}

TEST(PinnedAllocatorGpu, BlocksArePinnedAndReusedBySizeClass) {
  ZT_SKIP_WITHOUT_GPU();
  const AllocatorStats before = pinned_host_stats();
  void* block = pinned_host_allocate(5000);  // the 8 KiB class
  cudaPointerAttributes attributes{};
  ZT_CUDA_CHECK(cudaPointerGetAttributes(&attributes, block));
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  EXPECT_TRUE(is_pinned_host_pointer(block));
  EXPECT_TRUE(is_pinned_host_pointer(as_bytes(block) + 8191));
  std::memset(block, 0x3c, 5000);

  AllocatorStats s = pinned_host_stats();
  EXPECT_EQ(s.allocated_bytes, before.allocated_bytes + 8192);
  EXPECT_EQ(s.allocations, before.allocations + 1);

  pinned_host_free(block);
  EXPECT_FALSE(is_pinned_host_pointer(block));
  EXPECT_THROW(pinned_host_free(block), Error);

  EXPECT_EQ(pinned_host_allocate(6001), block);
  s = pinned_host_stats();
  EXPECT_EQ(s.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(s.device_mallocs, before.device_mallocs + 1);
  pinned_host_free(block);
}

TEST(PinnedAllocatorGpu, EmptyCacheGivesFreeBlocksBack) {
  ZT_SKIP_WITHOUT_GPU();
  void* in_use = pinned_host_allocate(100000);
  pinned_host_free(pinned_host_allocate(3 << 20));
  pinned_host_empty_cache();
  const AllocatorStats s = pinned_host_stats();
  EXPECT_EQ(s.reserved_bytes, s.allocated_bytes);
  EXPECT_TRUE(is_pinned_host_pointer(in_use));
  pinned_host_free(in_use);
  pinned_host_empty_cache();
  EXPECT_EQ(pinned_host_stats().reserved_bytes, pinned_host_stats().allocated_bytes);
}

TEST(PinnedAllocatorGpu, AsyncCopiesRoundTripThroughTheDevice) {
  ZT_SKIP_WITHOUT_GPU();
  constexpr std::size_t kBytes = (1 << 20) + 3;
  auto* source = static_cast<std::uint8_t*>(pinned_host_allocate(kBytes));
  auto* target = static_cast<std::uint8_t*>(pinned_host_allocate(kBytes));
  for (std::size_t i = 0; i < kBytes; ++i) source[i] = static_cast<std::uint8_t>(i * 7 + 1);
  std::memset(target, 0, kBytes);
  void* device = nullptr;
  ZT_CUDA_CHECK(cudaMalloc(&device, kBytes));
  Stream stream = Stream::create();
  ZT_CUDA_CHECK(cudaMemcpyAsync(device, source, kBytes, cudaMemcpyHostToDevice, stream.get()));
  ZT_CUDA_CHECK(cudaMemcpyAsync(target, device, kBytes, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(std::memcmp(source, target, kBytes), 0);
  ZT_CUDA_CHECK(cudaFree(device));
  pinned_host_free(source);
  pinned_host_free(target);
}

}  // namespace
}  // namespace zt
