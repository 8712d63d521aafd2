// A cap on the device memory one process reserves, for users who share a card (or who want
// to see whether a run fits a smaller one): ZT_CUDA_MEMORY_LIMIT, read when the device's
// allocator is created. The caching allocator then never reserves more than the cap, and
// frees its cache before it would; beyond that a request fails with the out-of-memory error,
// which names the cap. PyTorch's counterpart is torch.cuda.set_per_process_memory_fraction.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace zt {

inline constexpr const char* kMemoryLimitVariable = "ZT_CUDA_MEMORY_LIMIT";

// "24GiB", "24 GB", "512MiB", "25769803776" (bytes), or a fraction of the device's total
// memory ("0.5"). Units: B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB (powers of 1024),
// any case. Anything else, or a cap of zero, is a zt::UsageError naming the variable.
std::size_t parse_memory_limit(const std::string& text, std::size_t device_total);

// ZT_CUDA_MEMORY_LIMIT for a device of `device_total` bytes; nullopt when unset or empty.
std::optional<std::size_t> memory_limit_from_environment(std::size_t device_total);

}  // namespace zt
