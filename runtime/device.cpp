#include "runtime/device.h"

#include <cuda_runtime_api.h>

#include "runtime/check.h"
#include "runtime/error.h"

namespace zt {
namespace {

struct CudaProbe {
  int count = 0;
  std::string reason;
};

const CudaProbe& probe() {
  static const CudaProbe result = [] {
    CudaProbe p;
    cudaError_t status = cudaGetDeviceCount(&p.count);
    if (status != cudaSuccess) {
      p.count = 0;
      if (status == cudaErrorInsufficientDriver)
        p.reason = "no NVIDIA driver found (or it is older than this build's CUDA runtime)";
      else if (status == cudaErrorNoDevice)
        p.reason = "the driver sees no CUDA device (check CUDA_VISIBLE_DEVICES)";
      else
        p.reason = std::string("CUDA could not be initialised: ") + cudaGetErrorString(status);
      cudaGetLastError();
    } else if (p.count == 0) {
      p.reason = "the driver sees no CUDA device (check CUDA_VISIBLE_DEVICES)";
    }
    return p;
  }();
  return result;
}

void require_valid_index(int index) {
  int count = cuda_device_count();
  if (index < 0 || index >= count)
    throw Error("CUDA device " + std::to_string(index) + " does not exist: " + std::to_string(count) +
                " device(s) are visible" + (count == 0 ? " (" + cuda_unavailable_reason() + ")" : ""));
}

}  // namespace

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda" || text == "gpu") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    const std::string digits = text.substr(5);
    if (digits.find_first_not_of("0123456789") == std::string::npos) return Device::cuda(std::stoi(digits));
  }
  throw Error("unknown device '" + text + "'; use cpu, cuda or cuda:N");
}

int cuda_device_count() { return probe().count; }
std::string cuda_unavailable_reason() { return probe().reason; }
bool cuda_available() { return cuda_device_count() > 0; }

DeviceProperties device_properties(int index) {
  require_valid_index(index);
  cudaDeviceProp prop{};
  ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceProperties out;
  out.index = index;
  out.name = prop.name;
  out.total_memory = prop.totalGlobalMem;
  out.compute_major = prop.major;
  out.compute_minor = prop.minor;
  out.multiprocessors = prop.multiProcessorCount;
  out.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
  out.l2_cache_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), index) == cudaSuccess) out.pci_bus_id = bus_id;
  cudaGetLastError();
  return out;
}

bool can_access_peer(int device, int peer) {
  require_valid_index(device);
  require_valid_index(peer);
  int access = 0;
  ZT_CUDA_CHECK(cudaDeviceCanAccessPeer(&access, device, peer));
  return access != 0;
}

int current_cuda_device() {
  require_gpu("selecting a CUDA device");
  int index = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&index));
  return index;
}

void set_cuda_device(int index) {
  require_supported_gpu(index);
  ZT_CUDA_CHECK(cudaSetDevice(index));
}

DeviceGuard::DeviceGuard(int index) {
  ZT_CUDA_CHECK(cudaGetDevice(&previous_));
  if (index != previous_) ZT_CUDA_CHECK(cudaSetDevice(index));
}

DeviceGuard::~DeviceGuard() { cudaSetDevice(previous_); }

void require_gpu(const std::string& what) {
  if (cuda_available()) return;
  throw NoGpuError(what + " needs an NVIDIA GPU, but none is usable: " + cuda_unavailable_reason() +
                   ". Run `zerotune env` to see what this machine has, or use --device cpu "
                   "where the command offers it.");
}

MemoryInfo device_memory_info(int index) {
  require_valid_index(index);
  DeviceGuard guard(index);
  MemoryInfo info;
  ZT_CUDA_CHECK(cudaMemGetInfo(&info.free, &info.total));
  return info;
}

std::string unsupported_gpu_reason(const DeviceProperties& gpu) {
  if (gpu.compute_major >= kMinComputeMajor) return "";
  return "GPU " + std::to_string(gpu.index) + " (" + gpu.name + ") has compute capability " +
         std::to_string(gpu.compute_major) + "." + std::to_string(gpu.compute_minor) +
         "; zerotune's kernels need 8.0 or newer (A100/A800, A10/A40/L40, RTX 30xx/40xx, H100/H800/H200). "
         "Pick such a GPU with CUDA_VISIBLE_DEVICES or --device cuda:N, or run on the CPU with --device cpu.";
}

void require_supported_gpu(int index) {
  const std::string reason = unsupported_gpu_reason(device_properties(index));
  if (!reason.empty()) throw NoGpuError(reason);
}

std::string cpu_arithmetic(DType dtype) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) return dtype_name(dtype);
  const std::string name = dtype_name(dtype);
  return name + " weights and activations, float32 arithmetic inside every op (each result rounded to " + name +
         ", as PyTorch's CPU kernels do)";
}

}  // namespace zt
