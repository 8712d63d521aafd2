// Zero3Partitioner's parameter offload (offload_param {device: cpu}): read after the gather of
// train/zero/zero3_partitioner.cpp. Where the shards live, and their copy to the device before
// an all-gather reads them.
#include <chrono>

#include "runtime/streams/current_stream.h"
#include "train/zero/zero3_partitioner.h"

namespace zt::train {

// On the device, or in host memory with parameter offload: page-locked on a GPU run with
// pin_memory, so that the copy to the device is asynchronous and at full bus speed.
Tensor Zero3Partitioner::new_shard(std::int64_t numel, DType dtype) const {
  if (!offload_.enabled) return Tensor::zeros({numel}, dtype, device_);
  if (!(offload_.pin_memory && device_.is_cuda())) return Tensor::zeros({numel}, dtype, Device::cpu());
  Tensor shard = Tensor::empty_pinned({numel}, dtype);
  shard.zero_();
  return shard;
}

// What an all-gather of group g reads: the shard itself, or with parameter offload a new device
// copy of it. On a GPU the copy is queued on the compute stream, ahead of the all-gather that
// the communicator orders after it, and the host goes on at once; on the CPU it is a copy.
Tensor Zero3Partitioner::shard_on_device(std::size_t g) {
  const Tensor& shard = shards_[g];
  if (!offload_.enabled) return shard;
  const auto start = std::chrono::steady_clock::now();
  Tensor copy = Tensor::empty(shard.shape(), shard.dtype(), device_);
  if (device_.is_cuda())
    copy.copy_from_async(shard, current_stream());
  else
    copy.copy_from(shard);
  ++offload_counters_.copies;
  offload_counters_.bytes += static_cast<std::int64_t>(shard.nbytes());
  offload_counters_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return copy;
}

std::int64_t Zero3Partitioner::device_shard_bytes() const {
  std::int64_t bytes = 0;
  if (!offload_.enabled)
    for (const Tensor& shard : shards_) bytes += static_cast<std::int64_t>(shard.nbytes());
  return bytes;
}

std::int64_t Zero3Partitioner::host_shard_bytes() const {
  std::int64_t bytes = 0;
  if (offload_.enabled)
    for (const Tensor& shard : shards_) bytes += static_cast<std::int64_t>(shard.nbytes());
  return bytes;
}

}  // namespace zt::train
