// Where a tensor lives and what the GPUs of this machine can do. Querying never throws on
// a machine without GPU or driver: it reports zero devices and the reason, so commands that
// need no GPU run anywhere; require_gpu() turns the absence into a clear error.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/dtype.h"

namespace zt {

enum class DeviceType { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // CUDA ordinal; 0 for CPU

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {DeviceType::kCUDA, index}; }
  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"
};

// Parses "cpu", "cuda", "cuda:N", "gpu"; throws zt::Error listing the accepted forms.
Device parse_device(const std::string& text);

struct DeviceProperties {
  int index = 0;
  std::string name;
  std::size_t total_memory = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  std::size_t shared_memory_per_block_optin = 0;
  std::size_t l2_cache_bytes = 0;
  std::string pci_bus_id;
  bool supports_bf16() const { return compute_major >= 8; }
};

// Number of usable CUDA devices; 0 when there is no GPU or no driver.
int cuda_device_count();
// Why cuda_device_count() is 0 ("no CUDA driver found", ...); empty when GPUs exist.
std::string cuda_unavailable_reason();
bool cuda_available();

DeviceProperties device_properties(int index);
bool can_access_peer(int device, int peer);

int current_cuda_device();
void set_cuda_device(int index);

// Makes `index` the current CUDA device for a scope and restores the previous one after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// Throws zt::NoGpuError saying that `what` needs a GPU, and why none is usable.
void require_gpu(const std::string& what);

// The oldest GPUs zerotune's kernels run on: compute capability 8.0 (Ampere). The default build
// carries machine code for 8.0, 8.6, 8.9 and 9.0 and PTX that newer GPUs compile at load.
inline constexpr int kMinComputeMajor = 8;

// Why zerotune cannot compute on `gpu` ("" when it can): a compute capability below 8.0. The
// message names the GPU, its capability and what to do. (Every GPU of 8.0 or newer has bfloat16,
// so --bf16 needs no check of its own.)
std::string unsupported_gpu_reason(const DeviceProperties& gpu);
// Throws zt::NoGpuError with unsupported_gpu_reason for GPU `index`; set_cuda_device checks this.
void require_supported_gpu(int index);

// What the CPU computes in for a model stored in `dtype`. Its ops are references that compute
// in float32 (float64 for float64) whatever the storage: a 16-bit model keeps 16-bit weights and
// activations and rounds every op's result to them, as PyTorch's CPU kernels do.
std::string cpu_arithmetic(DType dtype);

// Free and total bytes of device memory as the driver reports them.
struct MemoryInfo {
  std::size_t free = 0;
  std::size_t total = 0;
};
MemoryInfo device_memory_info(int index);

}  // namespace zt
