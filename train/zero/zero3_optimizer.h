// ZeRO stage 3: parameters, gradients and optimizer state all partitioned. Read after
// train/zero/zero_optimizer.h (stages 0-2) and with train/zero/zero3_partitioner.h (the parameters).
//
// One step of one rank, with Ψ parameters over N ranks:
//   forward   each module is all-gathered just before it computes and released right after
//             (models/parameter_gatherer.h); a decoder layer runs without recording. From
//             the second micro-batch on, the next modules' gathers start ahead
//             (train/zero/zero3_partitioner.h, Prefetch).
//   backward  each layer is gathered again, recomputed with recording, differentiated and
//             released. As soon as every trainable parameter of a bucket has its gradient,
//             the bucket's fp32 gradients are reduce-scattered: the rank adds its chunk of
//             the sum to its own fp32 gradient and frees the bucket.
//   step      the squared norms of every rank's gradient chunks are all-reduced (the global
//             norm, for clipping) together with an overflow flag, so under fp16 every rank
//             skips the same steps; then AdamW on the rank's chunks only, and the updated
//             fp32 master chunk is cast into the rank's working-dtype shard. No collective:
//             the next forward gathers the new values.
// The buckets are the partitioner's trainable flat groups (one per module, so a rank's
// optimizer chunk and its parameter shard are the same elements), followed by buckets of
// reduce_bucket_size over the trainable parameters kept whole (persistent): those are
// all-gathered after the update, as stages 1 and 2 do for everything.
//
// With optimizer offload (offload_optimizer {device: cpu}) the rank's fp32 master chunks and
// Adam moments live in host memory and the CPU Adam updates them (train/optim/optimizer_offload.h,
// as stages 1 and 2 use it): the fp32 gradient chunks go to the host in tiles, and the new
// working-dtype chunks come back into the shards; the rest of the step is unchanged.
//
// Checkpoints hold the optimizer state per parameter name: each rank writes the slices it
// holds (held_state) and reads back those it needs, so a checkpoint resumes on any number of
// ranks and any stage (train/checkpoint/optimizer_state_files.h).
#pragma once

#include <memory>
#include <vector>

#include "distributed/communicator.h"
#include "models/model.h"
#include "train/deepspeed/deepspeed_config.h"
#include "train/optim/optimizer.h"
#include "train/zero/zero3_partitioner.h"
#include "train/zero/zero_layout.h"

namespace zt::train {

class Zero3Optimizer : public OptimizerEngine {
 public:
  // Partitions `model` (its trainable parameters are `trainable`) and keeps fp32 state for
  // this rank's chunks (in host memory with `offload`). zero.stage3_param_persistence_threshold
  // and reduce_bucket_size apply.
  Zero3Optimizer(models::CausalLM& model, const std::vector<TrainableParameter>& trainable,
                 const OptimizerConfig& config, distributed::Communicator& communicator, const ZeroConfig& zero,
                 const OffloadOptions& offload = {});
  Zero3Optimizer(const Zero3Optimizer&) = delete;
  Zero3Optimizer& operator=(const Zero3Optimizer&) = delete;

  StepResult step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) override;
  void zero_grad() override;
  // Collective: every rank must call it. The tensors are in host memory.
  std::map<std::string, Tensor> state_dict() const override;
  // This rank's pieces of each bucket: its shard of every trainable flat group, and its
  // chunks of the persistent buckets.
  std::vector<StateSlice> held_state() const override;
  // Collective: the shards take the new masters, the persistent buckets are all-gathered.
  void refresh_working_weights() override;

  Zero3Partitioner& partitioner() { return *partitioner_; }
  const Zero3Partitioner& partitioner() const { return *partitioner_; }
  // The optimizer's buckets: the trainable flat groups, then the persistent buckets.
  const ZeroLayout& layout() const { return layout_; }
  // fp32 elements of optimizer state this rank holds (master + moments + gradients).
  std::int64_t state_numel() const { return 4 * layout_.partition_numel; }
  // Null without offload.
  const OptimizerOffload* offload() const { return offload_.get(); }

 private:
  void on_gradient(std::size_t parameter, const Tensor& grad);
  void reduce_bucket(std::size_t bucket);
  void offload_state(const std::vector<TrainableParameter>& trainable, const OffloadOptions& options);
  Tensor working_chunk(std::size_t bucket) const;  // this rank's master chunk, in the working dtype
  void write_working_weights(std::size_t bucket, const Tensor& chunk);
  Tensor owned(const Tensor& partition, std::size_t bucket) const;  // this rank's chunk of bucket b
  const Zero3Partitioner::Parameter& parameter(std::size_t i) const { return partitioner_->parameters()[i]; }

  std::unique_ptr<Zero3Partitioner> partitioner_;
  OptimizerConfig config_;
  distributed::Communicator& comm_;
  int rank_;
  Device device_;
  ZeroLayout layout_;
  std::vector<std::size_t> group_of_;    // per bucket: its partitioner group, or kWhole (persistent)
  std::vector<std::size_t> bucket_of_;   // per partitioner parameter: its bucket (trainable ones)
  std::vector<std::size_t> slot_of_;     // and its position in it
  std::vector<Tensor> staging_;          // per bucket: fp32 gradients of this backward, only until reduced
  std::vector<std::size_t> ready_;       // per bucket: gradients arrived
  Tensor master_, exp_avg_, exp_avg_sq_, grads_;  // this rank's chunks, fp32 (the first three on the host with offload)
  std::unique_ptr<OptimizerOffload> offload_;
};

}  // namespace zt::train
