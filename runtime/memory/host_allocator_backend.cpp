#include "runtime/memory/host_allocator_backend.h"

#include <new>

#include "runtime/error.h"

namespace zt {
namespace {

// cudaMalloc returns at least 256-byte aligned memory; 512 also keeps every block aligned.
constexpr std::align_val_t kSegmentAlignment{512};

}  // namespace

HostAllocatorBackend::HostAllocatorBackend(std::size_t capacity, int device_index)
    : capacity_(capacity), device_index_(device_index) {}

HostAllocatorBackend::~HostAllocatorBackend() {
  for (const auto& [ptr, bytes] : segments_) ::operator delete(ptr, kSegmentAlignment);
}

void* HostAllocatorBackend::allocate_segment(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (used_ > capacity_ || bytes > capacity_ - used_) return nullptr;
  void* ptr = ::operator new(bytes, kSegmentAlignment, std::nothrow);
  if (ptr == nullptr) return nullptr;
  segments_.emplace(ptr, bytes);
  used_ += bytes;
  return ptr;
}

void HostAllocatorBackend::free_segment(void* ptr) {
  std::lock_guard lock(mutex_);
  auto it = segments_.find(ptr);
  if (it == segments_.end()) throw Error("HostAllocatorBackend: freeing a segment it never allocated");
  used_ -= it->second;
  segments_.erase(it);
  ::operator delete(ptr, kSegmentAlignment);
}

MemoryInfo HostAllocatorBackend::memory_info() {
  std::lock_guard lock(mutex_);
  return {capacity_ > used_ ? capacity_ - used_ : 0, capacity_};
}

BackendEvent HostAllocatorBackend::create_event() {
  std::lock_guard lock(mutex_);
  auto event = std::make_unique<HostEvent>();
  BackendEvent handle = event.get();
  events_.emplace(handle, std::move(event));
  return handle;
}

void HostAllocatorBackend::record_event(BackendEvent event, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  HostEvent& host_event = event_at(event);
  host_event.stream = stream;
  host_event.completed = false;
}

bool HostAllocatorBackend::event_completed(BackendEvent event) {
  std::lock_guard lock(mutex_);
  return event_at(event).completed;
}

void HostAllocatorBackend::destroy_event(BackendEvent event) {
  std::lock_guard lock(mutex_);
  if (events_.erase(event) == 0) throw Error("HostAllocatorBackend: destroying an unknown event");
}

void HostAllocatorBackend::finish_work_on(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  for (auto& [handle, event] : events_)
    if (event->stream == stream) event->completed = true;
}

void HostAllocatorBackend::set_capacity(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  capacity_ = bytes;
}

std::size_t HostAllocatorBackend::used_bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

std::size_t HostAllocatorBackend::live_segments() const {
  std::lock_guard lock(mutex_);
  return segments_.size();
}

std::size_t HostAllocatorBackend::live_events() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

HostAllocatorBackend::HostEvent& HostAllocatorBackend::event_at(BackendEvent event) {
  auto it = events_.find(event);
  if (it == events_.end()) throw Error("HostAllocatorBackend: using an unknown event");
  return *it->second;
}

}  // namespace zt
