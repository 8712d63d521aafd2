#include "runtime/memory/cuda_allocator_backend.h"

#include <string>

#include "runtime/check.h"
#include "runtime/error.h"

namespace zt {
namespace {

// Makes `device` current for a scope; the allocator is called from threads that may have
// selected another device, and must leave their choice as it found it.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    ZT_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) ZT_CUDA_CHECK(cudaSetDevice(device));
    switched_ = previous_ != device;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

class CudaAllocatorBackend final : public AllocatorBackend {
 public:
  explicit CudaAllocatorBackend(int device) : device_(device) {}

  int device_index() const override { return device_; }

  void* allocate_segment(std::size_t bytes) override {
    DeviceScope scope(device_);
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // out of memory is an answer here, not an error to carry on
      return nullptr;
    }
    ZT_CUDA_CHECK(status);
    return ptr;
  }

  void free_segment(void* ptr) override {
    DeviceScope scope(device_);
    ZT_CUDA_CHECK(cudaFree(ptr));
  }

  MemoryInfo memory_info() override {
    DeviceScope scope(device_);
    MemoryInfo info;
    ZT_CUDA_CHECK(cudaMemGetInfo(&info.free, &info.total));
    return info;
  }

  BackendEvent create_event() override {
    DeviceScope scope(device_);
    cudaEvent_t event = nullptr;
    ZT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return event;
  }

  void record_event(BackendEvent event, cudaStream_t stream) override {
    DeviceScope scope(device_);
    ZT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), stream));
  }

  bool event_completed(BackendEvent event) override {
    cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    ZT_CUDA_CHECK(status);
    return true;
  }

  void destroy_event(BackendEvent event) override { ZT_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event))); }

 private:
  int device_;
};

}  // namespace

std::unique_ptr<AllocatorBackend> make_cuda_allocator_backend(int device) {
  require_gpu("allocating CUDA device memory");
  int count = cuda_device_count();
  ZT_REQUIRE(device >= 0 && device < count, "CUDA device " + std::to_string(device) +
                                                " does not exist: " + std::to_string(count) + " device(s) are visible");
  return std::make_unique<CudaAllocatorBackend>(device);
}

}  // namespace zt
