// The caching device allocator on a real GPU, through the CUDA backend.
#include "runtime/memory/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/memory/cuda_allocator_backend.h"
#include "runtime/streams/stream.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::vector<std::uint8_t> pattern(std::size_t bytes, std::uint8_t seed) {
  std::vector<std::uint8_t> values(bytes);
  for (std::size_t i = 0; i < bytes; ++i) values[i] = static_cast<std::uint8_t>(i * 131 + seed);
  return values;
}

TEST(CachingAllocatorGpu, BlocksHoldWhatIsCopiedIntoThem) {
  ZT_SKIP_WITHOUT_GPU();
  CachingDeviceAllocator& allocator = device_allocator(0);
  std::vector<void*> blocks;
  std::vector<std::vector<std::uint8_t>> written;
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4097}, 3 * kMiB + 5, 12 * kMiB + 3}) {
    void* block = allocator.allocate(bytes, nullptr);
    written.push_back(pattern(bytes, static_cast<std::uint8_t>(blocks.size())));
    ZT_CUDA_CHECK(cudaMemcpy(block, written.back().data(), bytes, cudaMemcpyHostToDevice));
    blocks.push_back(block);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::vector<std::uint8_t> read(written[i].size());
    ZT_CUDA_CHECK(cudaMemcpy(read.data(), blocks[i], read.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(read, written[i]) << "block " << i;
    allocator.free(blocks[i]);
  }
}

TEST(CachingAllocatorGpu, OneAllocatorPerDevice) {
  ZT_SKIP_WITHOUT_GPU();
  EXPECT_EQ(&device_allocator(0), &device_allocator(0));
  EXPECT_THROW(device_allocator(cuda_device_count()), Error);
  EXPECT_THROW(device_allocator(-1), Error);
}

TEST(CachingAllocatorGpu, StatsAndEmptyCacheFollowTheDevice) {
  ZT_SKIP_WITHOUT_GPU();
  CachingDeviceAllocator allocator(make_cuda_allocator_backend(0));
  void* block = allocator.allocate(5 * kMiB + 7, nullptr);
  AllocatorStats s = allocator.stats();
  EXPECT_EQ(s.allocated_bytes, 5 * kMiB + 512);
  EXPECT_EQ(s.reserved_bytes, 20 * kMiB);
  EXPECT_EQ(s.device_mallocs, 1u);

  allocator.free(block);
  EXPECT_EQ(allocator.allocate(5 * kMiB + 7, nullptr), block);
  EXPECT_EQ(allocator.stats().cache_hits, 1u);
  allocator.free(block);

  allocator.empty_cache();
  s = allocator.stats();
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.device_frees, 1u);
  EXPECT_EQ(s.peak_reserved_bytes, 20 * kMiB);
}

TEST(CachingAllocatorGpu, BlockUsedOnAnotherStreamIsReusedOnceThatStreamFinishes) {
  ZT_SKIP_WITHOUT_GPU();
  CachingDeviceAllocator allocator(make_cuda_allocator_backend(0));
  Stream owner = Stream::create();
  Stream user = Stream::create();
  constexpr std::size_t kBytes = 64 * kMiB;
  void* block = allocator.allocate(kBytes, owner.get());
  ZT_CUDA_CHECK(cudaMemsetAsync(block, 0, kBytes, user.get()));
  allocator.record_stream(block, user.get());
  allocator.free(block);
  user.synchronize();
  EXPECT_EQ(allocator.allocate(kBytes, owner.get()), block);
  EXPECT_EQ(allocator.stats().awaiting_streams_bytes, 0u);
  EXPECT_EQ(allocator.stats().device_mallocs, 1u);
}

TEST(CachingAllocatorGpu, OutOfMemoryNamesTheRequestAndTheWayOut) {
  ZT_SKIP_WITHOUT_GPU();
  CachingDeviceAllocator allocator(make_cuda_allocator_backend(0));
  try {
    allocator.allocate(std::size_t{1} << 50, nullptr);
    FAIL() << "allocating 1 PiB should fail";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const char* part : {"out of memory", "device 0", "1.00 PiB", "free of", "per_device_train_batch_size"})
      EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "' in: " << message;
  }
  EXPECT_EQ(allocator.stats().ooms, 1u);
  void* after = allocator.allocate(kMiB, nullptr);
  EXPECT_NE(after, nullptr);
  allocator.free(after);
}

}  // namespace
}  // namespace zt
