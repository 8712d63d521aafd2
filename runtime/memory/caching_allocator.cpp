#include "runtime/memory/caching_allocator.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "runtime/log.h"
#include "runtime/memory/cuda_allocator_backend.h"
#include "runtime/memory/memory_limit.h"
#include "runtime/rank.h"
#include "runtime/terminal/byte_format.h"

namespace zt {
namespace {

using detail::Block;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kMinBlockSize = 512;
constexpr std::size_t kSmallRequestLimit = 1 * kMiB;
constexpr std::size_t kSmallSegmentSize = 2 * kMiB;
// Requests between the pools' limits share 20 MiB segments; from 10 MiB on each request
// gets a segment of its own, so that big tensors do not strand large remainders.
constexpr std::size_t kSharedLargeSegmentSize = 20 * kMiB;
constexpr std::size_t kOwnSegmentThreshold = 10 * kMiB;
constexpr std::size_t kSegmentGranularity = 2 * kMiB;
// Rounding anything larger would overflow; no device has that much memory anyway.
constexpr std::size_t kLargestRequest = std::numeric_limits<std::size_t>::max() - kSegmentGranularity;
// A large-pool remainder of 1 MiB or less would be a small-pool request stuck in the large
// pool; keeping it inside the allocated block costs less than the fragmentation.
constexpr std::size_t kLargeMinSplitRemainder = kSmallRequestLimit + kMinBlockSize;

std::size_t round_up(std::size_t value, std::size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::size_t segment_size_for(std::size_t size) {
  if (size <= kSmallRequestLimit) return kSmallSegmentSize;
  if (size < kOwnSegmentThreshold) return kSharedLargeSegmentSize;
  return round_up(size, kSegmentGranularity);
}

std::string pointer_text(const void* ptr) {
  std::ostringstream text;
  text << ptr;
  return text.str();
}

void raise_peaks(AllocatorStats& stats) {
  stats.peak_allocated_bytes = std::max(stats.peak_allocated_bytes, stats.allocated_bytes);
  stats.peak_reserved_bytes = std::max(stats.peak_reserved_bytes, stats.reserved_bytes);
}

}  // namespace

CachingDeviceAllocator::CachingDeviceAllocator(std::unique_ptr<AllocatorBackend> backend)
    : backend_(std::move(backend)), small_pool_(kMinBlockSize), large_pool_(kLargeMinSplitRemainder) {}

CachingDeviceAllocator::~CachingDeviceAllocator() {
  try {
    release_all_segments();
  } catch (const Error& e) {
    ZT_WARN("device allocator teardown could not give all memory back: " << e.what());
  }
}

void* CachingDeviceAllocator::allocate(std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  release_finished_blocks();
  Block* block = bytes <= kLargestRequest ? obtain_block(round_up(bytes, kMinBlockSize), stream) : nullptr;
  if (block == nullptr) {
    ++stats_.ooms;
    throw out_of_memory_error(bytes);
  }
  active_.emplace(block->ptr, block);
  stats_.allocated_bytes += block->size;
  ++stats_.allocations;
  raise_peaks(stats_);
  return block->ptr;
}

Block* CachingDeviceAllocator::obtain_block(std::size_t size, cudaStream_t stream) {
  if (Block* cached = take_cached(size, stream)) return cached;
  if (Block* fresh = take_from_new_segment(size, stream)) return fresh;
  // Out of memory. Blocks that other streams have finished with since may fit; failing
  // that, memory cached for other sizes and streams may, once it is given back.
  release_finished_blocks();
  if (Block* cached = take_cached(size, stream)) return cached;
  release_unused_segments();
  ++stats_.cache_flushes;
  return take_from_new_segment(size, stream);
}

Block* CachingDeviceAllocator::take_cached(std::size_t size, cudaStream_t stream) {
  Block* block = pool_for(size).take(stream, size);
  if (block != nullptr) ++stats_.cache_hits;
  return block;
}

Block* CachingDeviceAllocator::take_from_new_segment(std::size_t size, cudaStream_t stream) {
  const std::size_t segment_size = segment_size_for(size);
  if (memory_limit_ && stats_.reserved_bytes + segment_size > *memory_limit_) return nullptr;
  auto* memory = static_cast<char*>(backend_->allocate_segment(segment_size));
  if (memory == nullptr) return nullptr;
  auto* segment = new Block;
  segment->ptr = memory;
  segment->size = segment_size;
  segment->stream = stream;
  segment->pool = &pool_for(size);
  segments_.emplace(memory, segment);
  stats_.reserved_bytes += segment_size;
  ++stats_.device_mallocs;
  segment->pool->insert_free(segment);
  return segment->pool->take(stream, size);
}

detail::BlockPool& CachingDeviceAllocator::pool_for(std::size_t size) {
  return size <= kSmallRequestLimit ? small_pool_ : large_pool_;
}

void CachingDeviceAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  Block* block = find_active(ptr, "free");
  active_.erase(ptr);
  stats_.allocated_bytes -= block->size;
  ++stats_.frees;
  if (block->also_used_on.empty())
    block->pool->insert_free(block);  // may merge `block` away; it is not used after this
  else
    defer_until_streams_finish(block);
}

void CachingDeviceAllocator::record_stream(void* ptr, cudaStream_t stream) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  Block* block = find_active(ptr, "record_stream");
  if (stream == block->stream || std::ranges::find(block->also_used_on, stream) != block->also_used_on.end()) return;
  block->also_used_on.push_back(stream);
}

Block* CachingDeviceAllocator::find_active(void* ptr, const char* operation) const {
  auto it = active_.find(ptr);
  if (it == active_.end())
    throw Error(std::string("device allocator ") + operation + "(" + pointer_text(ptr) + ") on CUDA device " +
                std::to_string(backend_->device_index()) +
                ": the pointer was not returned by this allocator's allocate(), or was already freed");
  return it->second;
}

// An event on each other stream marks the point after which that stream no longer touches
// the block; the block is reusable once all of them have completed.
void CachingDeviceAllocator::defer_until_streams_finish(Block* block) {
  for (cudaStream_t stream : block->also_used_on) {
    BackendEvent event = backend_->create_event();
    backend_->record_event(event, stream);
    pending_.push_back({event, block});
    ++block->unfinished_events;
  }
  block->also_used_on.clear();
  block->state = BlockState::kAwaitingStreams;
  stats_.awaiting_streams_bytes += block->size;
}

void CachingDeviceAllocator::release_finished_blocks() {
  std::size_t still_pending = 0;
  for (const PendingEvent& pending : pending_) {
    if (!backend_->event_completed(pending.event)) {
      pending_[still_pending++] = pending;
      continue;
    }
    backend_->destroy_event(pending.event);
    if (--pending.block->unfinished_events == 0) {
      stats_.awaiting_streams_bytes -= pending.block->size;
      pending.block->pool->insert_free(pending.block);
    }
  }
  pending_.resize(still_pending);
}

void CachingDeviceAllocator::release_unused_segments() {
  for (detail::BlockPool* pool : {&small_pool_, &large_pool_}) {
    for (Block* segment : pool->take_unused_segments()) {
      backend_->free_segment(segment->ptr);
      segments_.erase(segment->ptr);
      stats_.reserved_bytes -= segment->size;
      ++stats_.device_frees;
      delete segment;
    }
  }
}

void CachingDeviceAllocator::release_all_segments() {
  for (const PendingEvent& pending : pending_) backend_->destroy_event(pending.event);
  pending_.clear();
  for (const auto& [base, first] : segments_) {
    for (Block* block = first; block != nullptr;) {
      Block* next = block->next;
      delete block;
      block = next;
    }
    backend_->free_segment(base);
  }
  segments_.clear();
  active_.clear();
}

void CachingDeviceAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_finished_blocks();
  release_unused_segments();
}

AllocatorStats CachingDeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  AllocatorStats current = stats_;
  current.segments = segments_.size();
  return current;
}

void CachingDeviceAllocator::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

std::vector<SegmentSnapshot> CachingDeviceAllocator::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<SegmentSnapshot> segments;
  for (const auto& [base, first] : segments_) {
    SegmentSnapshot segment{base, 0, first->stream, first->pool == &small_pool_, {}};
    for (const Block* block = first; block != nullptr; block = block->next) {
      segment.size += block->size;
      segment.blocks.push_back({block->ptr, block->size, block->state});
    }
    segments.push_back(std::move(segment));
  }
  return segments;
}

void CachingDeviceAllocator::set_memory_limit(std::optional<std::size_t> bytes) {
  std::lock_guard lock(mutex_);
  memory_limit_ = bytes;
}

std::optional<std::size_t> CachingDeviceAllocator::memory_limit() const {
  std::lock_guard lock(mutex_);
  return memory_limit_;
}

Error CachingDeviceAllocator::out_of_memory_error(std::size_t bytes) const {
  const MemoryInfo device = backend_->memory_info();
  std::ostringstream message;
  message << "CUDA out of memory on device " << backend_->device_index() << rank_suffix() << ": tried to allocate "
          << format_bytes(bytes) << "; this process's allocator has " << format_bytes(stats_.allocated_bytes)
          << " allocated and " << format_bytes(stats_.reserved_bytes) << " reserved, and the device reports "
          << format_bytes(device.free) << " free of " << format_bytes(device.total) << " total";
  if (memory_limit_)
    message << "; reservations are capped at " << format_bytes(*memory_limit_) << " by " << kMemoryLimitVariable;
  message << ". Try a smaller per_device_train_batch_size, --gradient_checkpointing, a higher "
             "ZeRO stage, or optimizer offload (offload_optimizer).";
  return Error(message.str());
}

CachingDeviceAllocator& device_allocator(int device) {
  require_gpu("allocating CUDA device memory");
  // Never destroyed: tensors freed during static destruction must still find their
  // allocator, and the CUDA runtime may be unloaded before a destructor could run.
  static auto* allocators = new std::vector<std::unique_ptr<CachingDeviceAllocator>>(cuda_device_count());
  static auto* mutex = new std::mutex;
  const int count = static_cast<int>(allocators->size());
  ZT_REQUIRE(device >= 0 && device < count, "CUDA device " + std::to_string(device) +
                                                " does not exist: " + std::to_string(count) + " device(s) are visible");
  std::lock_guard lock(*mutex);
  auto& slot = (*allocators)[device];
  if (!slot) {
    std::unique_ptr<AllocatorBackend> backend = make_cuda_allocator_backend(device);
    const std::optional<std::size_t> limit = memory_limit_from_environment(backend->memory_info().total);
    auto allocator = std::make_unique<CachingDeviceAllocator>(std::move(backend));
    if (limit)
      ZT_LOG(kInfo, "CUDA device " << device << ": this process reserves at most " << format_bytes(*limit) << " ("
                                   << kMemoryLimitVariable << ")");
    allocator->set_memory_limit(limit);
    slot = std::move(allocator);
  }
  return *slot;
}

}  // namespace zt
