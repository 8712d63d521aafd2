#include "ops/optim/host_chunks.h"

#include <cstring>
#include <memory>
#include <mutex>

#include "ops/optim/cpu_adam.h"
#include "ops/worker_pool.h"
#include "runtime/error.h"

namespace zt::ops {

void for_each_host_chunk(std::int64_t n,
                         const std::function<void(std::int64_t begin, std::int64_t end, std::int64_t chunk)>& body) {
  const std::int64_t chunks = (n + kHostChunkElements - 1) / kHostChunkElements;
  if (chunks <= 1) {
    if (n > 0) body(0, n, 0);
    return;
  }
  static std::mutex taking_turns;
  static std::unique_ptr<WorkerPool> pool;
  std::lock_guard<std::mutex> lock(taking_turns);
  if (!pool) pool = std::make_unique<WorkerPool>(default_cpu_adam_threads());
  const int threads = pool->size();
  pool->run([&](int thread) {
    for (std::int64_t c = thread; c < chunks; c += threads)
      body(c * kHostChunkElements, std::min(n, (c + 1) * kHostChunkElements), c);
  });
}

void zero_host_tensor(Tensor& tensor) {
  ZT_REQUIRE(tensor.device().is_cpu() && tensor.is_contiguous(),
             "zero_host_tensor: the tensor must be contiguous in host memory");
  auto* bytes = static_cast<std::uint8_t*>(tensor.data_ptr());
  const auto element = static_cast<std::int64_t>(dtype_size(tensor.dtype()));
  for_each_host_chunk(tensor.numel(), [&](std::int64_t begin, std::int64_t end, std::int64_t) {
    std::memset(bytes + begin * element, 0, static_cast<std::size_t>((end - begin) * element));
  });
}

}  // namespace zt::ops
