#include <atomic>
#include <cstdlib>

#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/pinned_allocator.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

std::atomic<bool> poison_device_tensors{false};

constexpr std::size_t kHostAlignment = 64;  // a cache line: lets SIMD loops use aligned loads

void* allocate_host(std::size_t nbytes) {
  std::size_t rounded = (nbytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* data = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
  if (data == nullptr) throw Error("out of host memory allocating " + std::to_string(nbytes) + " bytes");
  return data;
}

}  // namespace

void set_poison_new_device_tensors(bool enabled) { poison_device_tensors = enabled; }

Storage::Storage(void* data, std::size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

std::shared_ptr<Storage> Storage::allocate(std::size_t nbytes, Device device, cudaStream_t stream) {
  if (device.is_cpu()) return std::make_shared<Storage>(allocate_host(nbytes), nbytes, device, std::free);
  require_gpu("allocating a tensor on " + device.str());
  DeviceGuard guard(device.index);
  CachingDeviceAllocator& allocator = device_allocator(device.index);
  void* data = allocator.allocate(nbytes, stream);
  if (poison_device_tensors && nbytes > 0) ZT_CUDA_CHECK(cudaMemsetAsync(data, 0xFF, nbytes, stream));
  return std::make_shared<Storage>(data, nbytes, device, [&allocator](void* p) { allocator.free(p); });
}

std::shared_ptr<Storage> Storage::allocate_pinned(std::size_t nbytes) {
  void* data = pinned_host_allocate(nbytes);
  return std::make_shared<Storage>(data, nbytes, Device::cpu(), pinned_host_free);
}

std::shared_ptr<Storage> Storage::wrap(void* data, std::size_t nbytes, Device device,
                                       std::shared_ptr<void> keep_alive) {
  return std::make_shared<Storage>(data, nbytes, device,
                                   [keep = std::move(keep_alive)](void*) mutable { keep.reset(); });
}

}  // namespace zt
