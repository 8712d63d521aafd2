// ZT_CUDA_MEMORY_LIMIT: how the cap is written, and the caching allocator keeping under it
// (run on host memory through HostAllocatorBackend, whose capacity is far above the cap).
#include "runtime/memory/memory_limit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/host_allocator_backend.h"
#include "runtime/usage_error.h"

namespace zt {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;
const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(1);

TEST(MemoryLimit, ReadsSizesWithUnitsAndFractionsOfTheDevice) {
  EXPECT_EQ(parse_memory_limit("24GiB", 80 * kGiB), 24 * kGiB);
  EXPECT_EQ(parse_memory_limit("24 gib", 80 * kGiB), 24 * kGiB);
  EXPECT_EQ(parse_memory_limit("512MiB", 80 * kGiB), 512 * kMiB);
  EXPECT_EQ(parse_memory_limit("24GB", 80 * kGiB), std::size_t{24'000'000'000});
  EXPECT_EQ(parse_memory_limit("1.5GiB", 80 * kGiB), 3 * kGiB / 2);
  EXPECT_EQ(parse_memory_limit("25769803776", 80 * kGiB), 24 * kGiB);
  EXPECT_EQ(parse_memory_limit("0.25", 80 * kGiB), 20 * kGiB);
}

TEST(MemoryLimit, RefusesWhatIsNoSizeNamingTheVariable) {
  for (const char* text : {"", "lots", "-1GiB", "0", "24 parsecs", "0GiB", "nan"}) {
    try {
      parse_memory_limit(text, 80 * kGiB);
      ADD_FAILURE() << "'" << text << "' was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("ZT_CUDA_MEMORY_LIMIT='" + std::string(text) + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(MemoryLimit, UnsetOrEmptyMeansNoCap) {
  unsetenv(kMemoryLimitVariable);
  EXPECT_FALSE(memory_limit_from_environment(80 * kGiB).has_value());
  setenv(kMemoryLimitVariable, "", 1);
  EXPECT_FALSE(memory_limit_from_environment(80 * kGiB).has_value());
  setenv(kMemoryLimitVariable, "2GiB", 1);
  EXPECT_EQ(memory_limit_from_environment(80 * kGiB), 2 * kGiB);
  unsetenv(kMemoryLimitVariable);
}

TEST(MemoryLimit, TheAllocatorReservesNoMoreThanTheCap) {
  CachingDeviceAllocator allocator(std::make_unique<HostAllocatorBackend>(512 * kMiB, 0));
  allocator.set_memory_limit(64 * kMiB);
  void* first = allocator.allocate(40 * kMiB, kStream);
  try {
    allocator.allocate(40 * kMiB, kStream);
    ADD_FAILURE() << "80 MiB were reserved under a 64 MiB cap";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("capped at 64.00 MiB by ZT_CUDA_MEMORY_LIMIT"), std::string::npos) << e.what();
  }
  EXPECT_LE(allocator.stats().reserved_bytes, 64 * kMiB);
  allocator.free(first);
  EXPECT_NE(allocator.allocate(40 * kMiB, kStream), nullptr);  // the freed block is reused
}

TEST(MemoryLimit, CachedSegmentsAreGivenBackBeforeTheCapRefuses) {
  CachingDeviceAllocator allocator(std::make_unique<HostAllocatorBackend>(512 * kMiB, 0));
  allocator.set_memory_limit(64 * kMiB);
  allocator.free(allocator.allocate(30 * kMiB, kStream));
  allocator.free(allocator.allocate(20 * kMiB, kStream));  // fits the cached 30 MiB block
  // 50 MiB does not fit the cached 30 MiB: that segment goes back so that the cap holds.
  void* big = allocator.allocate(50 * kMiB, kStream);
  EXPECT_NE(big, nullptr);
  EXPECT_LE(allocator.stats().reserved_bytes, 64 * kMiB);
  EXPECT_GE(allocator.stats().cache_flushes, 1u);
  allocator.free(big);
}

}  // namespace
}  // namespace zt
