// How gradients reach a rank's fp32 gradient partition under ZeRO (train/zero/zero_engine.h):
// bucket by bucket, through staging buffers that exist only while a bucket is being filled
// or reduced. Read with train/zero/zero_layout.h (the buckets and each rank's chunk of them).
//
//   add        a parameter's gradient is added into its bucket's staging buffer, made (zeroed,
//              in the communication dtype) when the bucket's first gradient arrives
//   reduce     once the bucket has every gradient it waits for, it is reduce-scattered (stage
//              0: all-reduced) and the rank adds its chunk of the sum to its partition, in
//              the partition's dtype; then the staging buffer is freed. A partition in host memory
//              (optimizer offload) gets the chunk through train/zero/host_gradient_sink.h,
//              copied and added on the host while backward goes on, as DeepSpeed's offload
//              accumulates its fp32 gradients on the CPU
//   overlap    with overlap_comm the reduce-scatter runs on the communicator's stream while
//              backward goes on, and is finished when the next one starts or at finish():
//              at most one is in flight
//   bound      with most_staged, no more than that many staging buffers exist at once, the one
//              in flight included; a gradient that needs another finishes the reduction in
//              flight, or else reduces the oldest bucket still filling with what it has (the
//              rest of its gradients are reduced when they come: sums are linear, so each
//              element is still summed over ranks exactly once)
//
// Every rank must add the same gradients in the same order (the ranks run the same graph),
// so that all of them reduce the same buckets at the same moments. Reducing every
// micro-batch into the partition is DeepSpeed's ZeRO-2 behaviour (its epilogue after each
// backward). The partition's dtype is DeepSpeed's data_types.grad_accum_dtype (the engine
// chooses it, train/zero/zero_engine.h): fp32, or the working dtype, where each micro-batch's
// reduced chunk is added in fp32 and the sum rounded once, as torch's add_ on a bf16 tensor.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "tensor/tensor.h"
#include "train/zero/host_gradient_sink.h"
#include "train/zero/zero_layout.h"

namespace zt::train {

// What DeepSpeed's config asks of the gradients' collectives and accumulation.
struct GradientReduction {
  // communication_data_type: the staging buffers' and the collective's dtype; unset: the
  // working dtype the gradients come in (DeepSpeed's default: bf16 under bf16, fp16 under fp16).
  std::optional<DType> dtype{};
  // overlap_comm: a bucket's reduction runs while backward carries on.
  bool overlap = false;
  // data_types.grad_accum_dtype: fp32 or the working dtype; unset: the working dtype, as
  // DeepSpeed defaults it. It decides the gradient partition's dtype only where stages 1 and 2
  // partition it on the device (several ranks, no optimizer offload); elsewhere it is fp32.
  std::optional<DType> accumulation{};
};

class GradientBuckets {
 public:
  struct Options {
    DType dtype = DType::kF32;      // of the staging buffers and the collective
    Device device = Device::cpu();  // of the staging buffers: the gradients' (and the collective's) device
    bool all_reduce = false;        // stage 0: every rank keeps the whole sum
    bool overlap = false;           // start a reduction and finish it only when the next starts
    std::size_t most_staged = 0;    // staging buffers at once, the one in flight included; 0: no bound
    // > 0: the partition is in host memory (optimizer offload), and that many CPU threads add
    // each reduced chunk to it; 0: it is on the gradients' device.
    int host_partition_threads = 0;
  };
  // The --zero_trace label of bucket b's collective.
  using Label = std::function<std::string(std::size_t bucket)>;

  // `partition` is the rank's gradients (fp32, or 16-bit: ops::accumulate_ adds into either): its chunk of bucket b at
  // layout.partition_offset(b).
  GradientBuckets(const ZeroLayout& layout, const Tensor& partition, distributed::Communicator& comm, Options options,
                  Label label);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // `grad` (any float dtype, parameter `slot`'s numel) is added to bucket b; the bucket is
  // reduced once all its parameters have added one since it was last reduced.
  void add(std::size_t bucket, std::size_t slot, const Tensor& grad);
  // Reduces every bucket that has gradients staged and finishes the reduction in flight: the
  // end of a backward, and before a step. Afterwards nothing is staged.
  void finish();

  // With a host partition: what adding the chunks there cost, and how much of it was hidden.
  const HostGradientStats* host_gradients() const { return host_sink_ ? &host_sink_->stats() : nullptr; }
  // Bytes of the staging buffers and reduction outputs that exist now, and the most at once
  // since construction (a chunk on its way to a host partition is counted until it is sent).
  std::int64_t staged_bytes() const { return staged_bytes_; }
  std::int64_t most_staged_bytes() const { return most_staged_bytes_; }

 private:
  struct InFlight;
  void make_room();
  void reduce(std::size_t bucket);
  void finish_in_flight();
  void add_to_partition(const Tensor& target, const Tensor& chunk);
  Tensor allocate(std::int64_t numel);
  void release(const Tensor& buffer);

  const ZeroLayout& layout_;
  Tensor partition_;
  distributed::Communicator& comm_;
  Options options_;
  Label label_;
  std::vector<Tensor> staging_;       // per bucket: defined while it is filling
  std::vector<std::size_t> arrived_;  // per bucket: gradients added since it was last complete
  std::deque<std::size_t> filling_;   // the buckets with a staging buffer, oldest first
  std::unique_ptr<InFlight> in_flight_;
  std::unique_ptr<HostGradientSink> host_sink_;  // with host_partition_threads
  std::int64_t staged_bytes_ = 0, most_staged_bytes_ = 0;
};

}  // namespace zt::train
