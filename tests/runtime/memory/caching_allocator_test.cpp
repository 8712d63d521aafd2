// The caching device allocator's algorithm, run on host memory through HostAllocatorBackend.
#include "runtime/memory/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/memory/host_allocator_backend.h"
#include "runtime/terminal/byte_format.h"

namespace zt {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;

cudaStream_t stream(std::uintptr_t id) { return reinterpret_cast<cudaStream_t>(id); }
const cudaStream_t kStreamA = stream(1);
const cudaStream_t kStreamB = stream(2);
const cudaStream_t kStreamC = stream(3);

char* as_bytes(void* ptr) { return static_cast<char*>(ptr); }

std::size_t count_blocks(const std::vector<SegmentSnapshot>& segments, BlockState state) {
  std::size_t count = 0;
  for (const SegmentSnapshot& segment : segments)
    count += std::ranges::count_if(segment.blocks, [&](const BlockSnapshot& b) { return b.state == state; });
  return count;
}

class CachingAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override { make_allocator(HostAllocatorBackend::kDefaultCapacity); }

  void make_allocator(std::size_t capacity, int device_index = 0) {
    allocator_.reset();
    auto backend = std::make_unique<HostAllocatorBackend>(capacity, device_index);
    backend_ = backend.get();
    allocator_ = std::make_unique<CachingDeviceAllocator>(std::move(backend));
  }

  void* allocate(std::size_t bytes, cudaStream_t on = kStreamA) { return allocator_->allocate(bytes, on); }
  AllocatorStats stats() const { return allocator_->stats(); }

  HostAllocatorBackend* backend_ = nullptr;
  std::unique_ptr<CachingDeviceAllocator> allocator_;
};

TEST(FormatBytes, PicksTheLargestUnitBelowTheValue) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(2 * kMiB + kMiB / 4), "2.25 MiB");
  EXPECT_EQ(format_bytes(std::size_t{2} << 30), "2.00 GiB");
  EXPECT_EQ(format_bytes(std::size_t{1} << 50), "1.00 PiB");
}

TEST_F(CachingAllocatorTest, ZeroBytesAndNullptrAreNoOps) {
  EXPECT_EQ(allocate(0), nullptr);
  allocator_->free(nullptr);
  allocator_->record_stream(nullptr, kStreamB);
  EXPECT_EQ(stats().allocations, 0u);
  EXPECT_EQ(stats().frees, 0u);
  EXPECT_EQ(stats().device_mallocs, 0u);
}

TEST_F(CachingAllocatorTest, RoundsRequestsUpTo512ByteMultiples) {
  void* one = allocate(1);
  EXPECT_EQ(stats().allocated_bytes, 512u);
  void* just_over = allocate(513);
  EXPECT_EQ(stats().allocated_bytes, 512u + 1024u);
  void* exact = allocate(4096);
  EXPECT_EQ(stats().allocated_bytes, 512u + 1024u + 4096u);
  // Consecutive blocks carved from one segment: each starts where the rounded previous ends.
  EXPECT_EQ(as_bytes(just_over), as_bytes(one) + 512);
  EXPECT_EQ(as_bytes(exact), as_bytes(just_over) + 1024);
  for (void* ptr : {one, just_over, exact}) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ptr) % 512, 0u);
}

TEST_F(CachingAllocatorTest, SmallRequestsShareTwoMebibyteSegments) {
  void* first = allocate(kMiB);  // the largest small request
  EXPECT_EQ(stats().reserved_bytes, 2 * kMiB);
  void* second = allocate(kMiB - 100);
  EXPECT_EQ(stats().device_mallocs, 1u);
  EXPECT_EQ(as_bytes(second), as_bytes(first) + kMiB);
  allocate(700);  // the segment is full: a second one
  EXPECT_EQ(stats().device_mallocs, 2u);
  EXPECT_EQ(stats().reserved_bytes, 4 * kMiB);
  auto segments = allocator_->snapshot();
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_TRUE(segments[0].small_pool);
  EXPECT_TRUE(segments[1].small_pool);
}

TEST_F(CachingAllocatorTest, MidSizedRequestsShareTwentyMebibyteSegments) {
  void* first = allocate(kMiB + 1);  // the smallest large request
  EXPECT_EQ(stats().reserved_bytes, 20 * kMiB);
  EXPECT_EQ(stats().allocated_bytes, kMiB + 512);
  void* second = allocate(9 * kMiB + 3);
  EXPECT_EQ(as_bytes(second), as_bytes(first) + kMiB + 512);
  EXPECT_EQ(stats().device_mallocs, 1u);
  auto segments = allocator_->snapshot();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_FALSE(segments[0].small_pool);
}

TEST_F(CachingAllocatorTest, RequestsFromTenMebibytesGetTheirOwnSegment) {
  allocate(10 * kMiB);
  EXPECT_EQ(stats().reserved_bytes, 10 * kMiB);
  allocate(10 * kMiB + 3);  // rounded up to a 2 MiB multiple
  EXPECT_EQ(stats().reserved_bytes, 10 * kMiB + 12 * kMiB);
  EXPECT_EQ(stats().device_mallocs, 2u);
}

TEST_F(CachingAllocatorTest, SmallAndLargePoolsDoNotServeEachOther) {
  allocator_->free(allocate(3 * kMiB + 5));  // leaves a free 20 MiB large segment
  void* small = allocate(4 * kKiB + 1);
  EXPECT_EQ(stats().device_mallocs, 2u);
  allocator_->free(small);  // leaves a free small segment
  allocate(2 * kMiB);       // large, and the small segment would have room: still the large pool
  EXPECT_EQ(stats().device_mallocs, 2u);
  auto segments = allocator_->snapshot();
  ASSERT_EQ(segments.size(), 2u);
  for (const SegmentSnapshot& segment : segments)
    EXPECT_EQ(count_blocks({segment}, BlockState::kAllocated), segment.small_pool ? 0u : 1u);
}

TEST_F(CachingAllocatorTest, BestFitPicksTheSmallestFreeBlockThatFits) {
  // Free holes of 8 KiB, 4 KiB and 16 KiB, kept apart by allocated 512-byte spacers.
  void* hole_8k = allocate(8 * kKiB);
  allocate(1);
  void* hole_4k = allocate(4 * kKiB);
  allocate(1);
  void* hole_16k = allocate(16 * kKiB);
  allocate(1);
  for (void* hole : {hole_8k, hole_4k, hole_16k}) allocator_->free(hole);
  const std::uint64_t hits_before = stats().cache_hits;

  EXPECT_EQ(allocate(3000), hole_4k);
  EXPECT_EQ(allocate(5000), hole_8k);
  EXPECT_EQ(allocate(9 * kKiB), hole_16k);
  EXPECT_EQ(stats().device_mallocs, 1u);
  EXPECT_EQ(stats().cache_hits, hits_before + 3);
}

TEST_F(CachingAllocatorTest, SmallBlocksSplitDownToTheLastFiveHundredTwelveBytes) {
  void* first = allocate(kMiB);
  void* second = allocate(kMiB - 512);  // leaves exactly 512 bytes, still worth a block
  EXPECT_EQ(stats().allocated_bytes, 2 * kMiB - 512);
  void* last = allocate(300);
  EXPECT_EQ(as_bytes(last), as_bytes(second) + kMiB - 512);
  EXPECT_EQ(as_bytes(second), as_bytes(first) + kMiB);
  EXPECT_EQ(stats().device_mallocs, 1u);
}

TEST_F(CachingAllocatorTest, LargeBlocksSplitOnlyWhenMoreThanOneMebibyteRemains) {
  void* own = allocate(11 * kMiB + 100);  // 12 MiB segment; a remainder under 1 MiB stays inside
  EXPECT_EQ(stats().allocated_bytes, 12 * kMiB);
  allocator_->free(own);
  allocator_->empty_cache();  // or best fit would serve what follows from that 12 MiB block

  void* head = allocate(2 * kMiB);  // a 20 MiB segment, split: 18 MiB remain free
  EXPECT_EQ(stats().allocated_bytes, 2 * kMiB);
  void* rest = allocate(17 * kMiB);  // would leave exactly 1 MiB: not split, takes all 18 MiB
  EXPECT_EQ(as_bytes(rest), as_bytes(head) + 2 * kMiB);
  EXPECT_EQ(stats().allocated_bytes, 20 * kMiB);
  allocator_->free(rest);

  void* split = allocate(17 * kMiB - 512);  // leaves 1 MiB + 512 bytes: split
  EXPECT_EQ(split, rest);
  EXPECT_EQ(stats().allocated_bytes, 2 * kMiB + 17 * kMiB - 512);
  void* tail = allocate(kMiB + 512);
  EXPECT_EQ(as_bytes(tail), as_bytes(split) + 17 * kMiB - 512);
  EXPECT_EQ(stats().device_mallocs, 2u);
}

TEST_F(CachingAllocatorTest, FreeingAdjacentBlocksInAnyOrderMergesThemIntoOne) {
  const std::array<std::size_t, 3> sizes = {3000, 5000, 7000};  // 3072 + 5120 + 7168 after rounding
  const std::size_t total = 3072 + 5120 + 7168;
  std::array<int, 3> order = {0, 1, 2};
  do {
    make_allocator(HostAllocatorBackend::kDefaultCapacity);
    std::array<void*, 3> blocks{};
    for (int i = 0; i < 3; ++i) blocks[i] = allocate(sizes[i]);
    allocate(1);  // a spacer, so the merged block cannot also absorb the segment's free tail
    for (int i : order) allocator_->free(blocks[i]);

    auto segments = allocator_->snapshot();
    ASSERT_EQ(segments.size(), 1u);
    const auto& first = segments[0].blocks[0];
    EXPECT_EQ(first.ptr, blocks[0]);
    EXPECT_EQ(first.size, total);
    EXPECT_EQ(first.state, BlockState::kFree);
    EXPECT_EQ(count_blocks(segments, BlockState::kFree), 2u);  // the merged block and the tail

    EXPECT_EQ(allocate(total), blocks[0]);
    EXPECT_EQ(stats().device_mallocs, 1u);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(CachingAllocatorTest, FreeingEverythingLeavesOneFreeBlockPerSegment) {
  std::vector<void*> blocks;
  for (std::size_t bytes : {1000, 70000, 3, 512, 200000}) blocks.push_back(allocate(bytes));
  for (void* block : blocks) allocator_->free(block);
  auto segments = allocator_->snapshot();
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_EQ(segments[0].blocks.size(), 1u);
  EXPECT_EQ(segments[0].blocks[0].size, 2 * kMiB);
}

TEST_F(CachingAllocatorTest, RepeatedAllocationsReuseTheCacheWithoutDeviceMallocs) {
  void* first = allocate(123457);
  allocator_->free(first);
  for (int i = 0; i < 99; ++i) {
    void* again = allocate(123457);
    EXPECT_EQ(again, first);
    allocator_->free(again);
  }
  EXPECT_EQ(stats().device_mallocs, 1u);
  EXPECT_EQ(stats().cache_hits, 99u);
  EXPECT_EQ(stats().allocations, 100u);
  EXPECT_EQ(stats().frees, 100u);
}

TEST_F(CachingAllocatorTest, BlocksAreReusedOnlyOnTheirOwnStream) {
  void* on_a = allocate(12 * kMiB, kStreamA);
  allocator_->free(on_a);
  void* on_b = allocate(12 * kMiB, kStreamB);
  EXPECT_NE(on_b, on_a);
  EXPECT_EQ(stats().device_mallocs, 2u);
  EXPECT_EQ(allocate(12 * kMiB, kStreamA), on_a);
  EXPECT_EQ(stats().device_mallocs, 2u);

  void* small_a = allocate(777, kStreamA);
  allocator_->free(small_a);
  EXPECT_NE(allocate(777, kStreamB), small_a);
  EXPECT_EQ(stats().device_mallocs, 4u);
}

TEST_F(CachingAllocatorTest, RecordedStreamDefersReuseUntilItsEventCompletes) {
  void* block = allocate(12 * kMiB, kStreamA);
  allocator_->record_stream(block, kStreamB);
  allocator_->free(block);
  EXPECT_EQ(stats().awaiting_streams_bytes, 12 * kMiB);
  EXPECT_EQ(stats().allocated_bytes, 0u);
  EXPECT_EQ(backend_->live_events(), 1u);

  void* meanwhile = allocate(12 * kMiB, kStreamA);
  EXPECT_NE(meanwhile, block);
  EXPECT_EQ(stats().device_mallocs, 2u);

  backend_->finish_work_on(kStreamB);
  EXPECT_EQ(allocate(12 * kMiB, kStreamA), block);
  EXPECT_EQ(stats().awaiting_streams_bytes, 0u);
  EXPECT_EQ(backend_->live_events(), 0u);
  EXPECT_EQ(stats().device_mallocs, 2u);
}

TEST_F(CachingAllocatorTest, BlockUsedOnSeveralStreamsWaitsForAllOfThem) {
  void* block = allocate(5000, kStreamA);
  allocate(1, kStreamA);  // a spacer: the freed block must not merge into the segment's tail
  allocator_->record_stream(block, kStreamB);
  allocator_->record_stream(block, kStreamC);
  allocator_->record_stream(block, kStreamB);  // recorded once
  allocator_->free(block);
  EXPECT_EQ(backend_->live_events(), 2u);

  backend_->finish_work_on(kStreamB);
  EXPECT_NE(allocate(5000, kStreamA), block);
  backend_->finish_work_on(kStreamC);
  EXPECT_EQ(allocate(5000, kStreamA), block);
  EXPECT_EQ(backend_->live_events(), 0u);
}

TEST_F(CachingAllocatorTest, RecordingTheAllocatingStreamNeedsNoEvent) {
  void* block = allocate(5000, kStreamA);
  allocator_->record_stream(block, kStreamA);
  allocator_->free(block);
  EXPECT_EQ(backend_->live_events(), 0u);
  EXPECT_EQ(allocate(5000, kStreamA), block);
}

TEST_F(CachingAllocatorTest, BlockAwaitingStreamsIsNotMergedWithItsNeighbours) {
  void* waiting = allocate(4096);
  void* neighbour = allocate(4096);
  allocate(1);
  allocator_->record_stream(waiting, kStreamB);
  allocator_->free(waiting);
  allocator_->free(neighbour);
  auto blocks = allocator_->snapshot()[0].blocks;
  EXPECT_EQ(blocks[0].state, BlockState::kAwaitingStreams);
  EXPECT_EQ(blocks[1].state, BlockState::kFree);
  EXPECT_EQ(blocks[1].size, 4096u);

  backend_->finish_work_on(kStreamB);
  allocator_->empty_cache();  // also collects finished blocks
  blocks = allocator_->snapshot()[0].blocks;
  EXPECT_EQ(blocks[0].state, BlockState::kFree);
  EXPECT_EQ(blocks[0].size, 8192u);
}

TEST_F(CachingAllocatorTest, EmptyCacheReleasesOnlySegmentsWithNothingInUse) {
  void* kept = allocate(1000);        // small segment, stays partly in use
  allocator_->free(allocate(20000));  // a free block inside the same segment
  void* own_segment = allocate(12 * kMiB);
  void* shared_segment = allocate(3 * kMiB);
  allocator_->free(own_segment);
  allocator_->free(shared_segment);
  void* awaiting = allocate(14 * kMiB, kStreamC);  // on its own stream, so in a segment of its own
  allocator_->record_stream(awaiting, kStreamB);
  allocator_->free(awaiting);
  EXPECT_EQ(stats().reserved_bytes, 2 * kMiB + 12 * kMiB + 20 * kMiB + 14 * kMiB);

  allocator_->empty_cache();
  EXPECT_EQ(stats().device_frees, 2u);
  EXPECT_EQ(stats().reserved_bytes, 2 * kMiB + 14 * kMiB);
  EXPECT_EQ(backend_->used_bytes(), 2 * kMiB + 14 * kMiB);
  std::memset(kept, 0x5a, 1000);  // still valid memory

  backend_->finish_work_on(kStreamB);
  allocator_->empty_cache();
  EXPECT_EQ(stats().reserved_bytes, 2 * kMiB);
  allocator_->free(kept);
  allocator_->empty_cache();
  EXPECT_EQ(stats().reserved_bytes, 0u);
  EXPECT_EQ(stats().segments, 0u);
  EXPECT_EQ(backend_->live_segments(), 0u);
}

TEST_F(CachingAllocatorTest, StatsTrackCurrentAndPeakBytes) {
  void* a = allocate(3 * kMiB + 1);
  void* b = allocate(700);
  void* c = allocate(18 * kMiB + 1);  // more than the 20 MiB segment has left: a segment of its own
  AllocatorStats s = stats();
  EXPECT_EQ(s.allocated_bytes, (3 * kMiB + 512) + 1024 + (18 * kMiB + 512));
  EXPECT_EQ(s.reserved_bytes, 20 * kMiB + 2 * kMiB + 20 * kMiB);
  EXPECT_EQ(s.peak_allocated_bytes, s.allocated_bytes);
  EXPECT_EQ(s.peak_reserved_bytes, s.reserved_bytes);
  EXPECT_EQ(s.segments, 3u);
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.device_mallocs, 3u);
  EXPECT_EQ(s.cache_hits, 0u);

  allocator_->free(c);
  allocator_->free(a);
  s = stats();
  EXPECT_EQ(s.allocated_bytes, 1024u);
  EXPECT_EQ(s.peak_allocated_bytes, (3 * kMiB + 512) + 1024 + (18 * kMiB + 512));
  EXPECT_EQ(s.frees, 2u);

  allocator_->empty_cache();
  allocator_->reset_peak_stats();
  s = stats();
  EXPECT_EQ(s.peak_allocated_bytes, 1024u);
  EXPECT_EQ(s.peak_reserved_bytes, 2 * kMiB);
  EXPECT_EQ(s.reserved_bytes, 2 * kMiB);
  EXPECT_EQ(s.device_frees, 2u);

  allocator_->free(b);
  allocator_->free(allocate(5 * kMiB));
  s = stats();
  EXPECT_EQ(s.peak_allocated_bytes, 5 * kMiB);
  EXPECT_EQ(s.peak_reserved_bytes, 22 * kMiB);
}

TEST_F(CachingAllocatorTest, OutOfMemoryEmptiesTheCacheAndRetries) {
  make_allocator(26 * kMiB);
  void* first = allocate(12 * kMiB);
  allocator_->free(allocate(12 * kMiB));  // cached, but it holds half the device
  void* bigger = allocate(14 * kMiB);     // fits only once the cached segment is gone
  EXPECT_NE(bigger, nullptr);
  AllocatorStats s = stats();
  EXPECT_EQ(s.cache_flushes, 1u);
  EXPECT_EQ(s.device_frees, 1u);
  EXPECT_EQ(s.ooms, 0u);
  EXPECT_EQ(s.reserved_bytes, 26 * kMiB);
  std::memset(first, 1, 12 * kMiB);
  std::memset(bigger, 2, 14 * kMiB);
}

TEST_F(CachingAllocatorTest, BlocksOtherStreamsFinishedWithAreReusedBeforeAnyNewSegment) {
  make_allocator(12 * kMiB);
  void* block = allocate(12 * kMiB);
  allocator_->record_stream(block, kStreamB);
  allocator_->free(block);
  backend_->finish_work_on(kStreamB);
  EXPECT_EQ(allocate(12 * kMiB), block);
  EXPECT_EQ(stats().cache_flushes, 0u);
}

TEST_F(CachingAllocatorTest, OutOfMemoryErrorSaysWhatWasAskedWhatIsHeldAndWhatToTry) {
  make_allocator(32 * kMiB, /*device_index=*/3);
  void* held = allocate(6 * kMiB);  // in a 20 MiB segment
  try {
    allocate(std::size_t{2} << 30);
    FAIL() << "expected zt::Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const char* part : {"out of memory", "device 3", "2.00 GiB", "6.00 MiB allocated", "20.00 MiB reserved",
                             "12.00 MiB free of 32.00 MiB total", "per_device_train_batch_size",
                             "--gradient_checkpointing", "higher ZeRO stage", "offload_optimizer"})
      EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "' in: " << message;
  }
  EXPECT_EQ(stats().ooms, 1u);
  EXPECT_EQ(stats().allocated_bytes, 6 * kMiB);
  allocator_->free(held);
  EXPECT_NE(allocate(30 * kMiB), nullptr);  // fits once the cache is emptied: still usable
}

TEST_F(CachingAllocatorTest, AbsurdSizesFailAsOutOfMemory) {
  EXPECT_THROW(allocate(SIZE_MAX), Error);
  EXPECT_THROW(allocate(SIZE_MAX - 100), Error);
  EXPECT_EQ(stats().ooms, 2u);
}

TEST_F(CachingAllocatorTest, FreeingAForeignOrFreedPointerIsAnError) {
  int local = 0;
  EXPECT_THROW(allocator_->free(&local), Error);
  void* block = allocate(1000);
  EXPECT_THROW(allocator_->free(as_bytes(block) + 512), Error);  // inside, not the start
  allocator_->free(block);
  try {
    allocator_->free(block);
    FAIL() << "expected zt::Error for a double free";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already freed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(allocator_->record_stream(block, kStreamB), Error);
  EXPECT_EQ(stats().frees, 1u);
}

TEST_F(CachingAllocatorTest, DestroyingTheAllocatorGivesEverySegmentBack) {
  auto backend = std::make_unique<HostAllocatorBackend>();
  HostAllocatorBackend* raw = backend.get();
  {
    CachingDeviceAllocator allocator(std::move(backend));
    allocator.allocate(5000, kStreamA);
    void* awaiting = allocator.allocate(12 * kMiB, kStreamA);
    allocator.record_stream(awaiting, kStreamB);
    allocator.free(awaiting);
    allocator.free(allocator.allocate(3 * kMiB, kStreamA));
    EXPECT_EQ(raw->live_segments(), 3u);
  }
  // `raw` died with the allocator; that it freed everything without errors is the test,
  // and HostAllocatorBackend::free_segment throws on anything it did not hand out.
}

TEST_F(CachingAllocatorTest, ConcurrentThreadsNeverShareBytes) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 3000;
  const std::array<std::size_t, 8> sizes = {1, 700, 4097, 65536 + 3, 999999, kMiB + 1, 3 * kMiB + 77, 11 * kMiB};
  const cudaStream_t side_stream = stream(100);
  auto work = [&](int thread_index) {
    std::mt19937 random(static_cast<unsigned>(thread_index));
    const cudaStream_t own_stream = stream(10 + thread_index);
    const char pattern = static_cast<char>('a' + thread_index);
    std::vector<std::pair<char*, std::size_t>> live;
    for (int i = 0; i < kIterations; ++i) {
      if (live.size() < 8 && random() % 2 == 0) {
        std::size_t bytes = sizes[random() % sizes.size()];
        char* ptr = as_bytes(allocator_->allocate(bytes, own_stream));
        std::size_t marked = std::min<std::size_t>(bytes, 256);
        std::memset(ptr, pattern, marked);
        std::memset(ptr + bytes - marked, pattern, marked);
        if (random() % 4 == 0) allocator_->record_stream(ptr, side_stream);
        live.emplace_back(ptr, bytes);
      } else if (!live.empty()) {
        auto [ptr, bytes] = live.back();
        live.pop_back();
        EXPECT_EQ(ptr[0], pattern);
        EXPECT_EQ(ptr[bytes - 1], pattern);
        allocator_->free(ptr);
      }
      if (thread_index == 0 && i % 100 == 0) backend_->finish_work_on(side_stream);
      if (thread_index == 1 && i % 500 == 0) allocator_->empty_cache();
    }
    for (auto [ptr, bytes] : live) allocator_->free(ptr);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& thread : threads) thread.join();

  backend_->finish_work_on(side_stream);
  allocator_->empty_cache();
  AllocatorStats s = stats();
  EXPECT_EQ(s.allocations, s.frees);
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.awaiting_streams_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(backend_->used_bytes(), 0u);
  EXPECT_EQ(backend_->live_events(), 0u);
}

TEST(DeviceAllocator, NeedsAGpu) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(device_allocator(0), NoGpuError);
}

}  // namespace
}  // namespace zt
