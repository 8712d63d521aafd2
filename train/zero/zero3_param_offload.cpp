// Zero3Partitioner's parameter offload (offload_param {device: cpu}): read after the gather of
// train/zero/zero3_partitioner.cpp. Where the shards live, and their copy to the device before
// an all-gather reads them.
#include <chrono>

#include "runtime/profile/step_profiler.h"
#include "runtime/streams/current_stream.h"
#include "runtime/streams/stream.h"
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

namespace {

// A prefetch queued from the copy stream: waiting for it waits for the collective and orders
// the caller's stream after the copy stream too, which holds the shard's copy and, for a
// communicator that works on its caller's stream (one in-process rank), the gather itself.
class AfterCopyStream : public distributed::PendingCollective {
 public:
  AfterCopyStream(std::unique_ptr<distributed::PendingCollective> gather, cudaStream_t copy_stream)
      : gather_(std::move(gather)) {
    queued_.record(copy_stream);
  }
  void wait() override {
    gather_->wait();
    ProfileRegion copying(OpFamily::kOffloadCopy);
    queued_.wait_on(current_stream());
  }

 private:
  std::unique_ptr<distributed::PendingCollective> gather_;
  Event queued_;
};

}  // namespace

// Group g's host shard into `device_copy`, queued on `stream` (on the CPU: copied at once).
void Zero3Partitioner::copy_shard(std::size_t g, Tensor device_copy, cudaStream_t stream) {
  const auto start = std::chrono::steady_clock::now();
  if (device_.is_cuda())
    device_copy.copy_from_async(shards_[g], stream);
  else
    device_copy.copy_from(shards_[g]);
  ++offload_counters_.copies;
  offload_counters_.bytes += static_cast<std::int64_t>(shards_[g].nbytes());
  offload_counters_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What an all-gather of group g reads: the shard itself, or with parameter offload a new device
// copy of it, queued on the compute stream ahead of the all-gather that the communicator
// orders after it (the host goes on at once).
Tensor Zero3Partitioner::shard_on_device(std::size_t g) {
  if (!offload_.enabled) return shards_[g];
  Tensor copy = Tensor::empty(shards_[g].shape(), shards_[g].dtype(), device_);
  ProfileRegion copying(OpFamily::kOffloadCopy);
  copy_shard(g, copy, current_stream());
  return copy;
}

// A prefetch under parameter offload on a GPU: the shard's copy goes on the copy stream, so
// it runs beside the compute queued after it instead of in its line, and the all-gather is
// queued from there, after the copy. The copy stream first waits for the compute queued so
// far: the buffers it writes were just allocated on the compute stream, whose earlier users
// of that memory are there.
std::unique_ptr<distributed::PendingCollective> Zero3Partitioner::gather_on_copy_stream(std::size_t g,
                                                                                        const Tensor& whole) {
  const cudaStream_t stream = copy_stream_->get();
  Tensor staged = Tensor::empty(shards_[g].shape(), shards_[g].dtype(), device_);
  Event compute_ready;
  compute_ready.record(current_stream());
  compute_ready.wait_on(stream);
  StreamScope on_copy_stream(stream);
  copy_shard(g, staged, stream);
  groups_[g].staged = staged;
  return std::make_unique<AfterCopyStream>(comm_.start_all_gather(staged, whole), stream);
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
