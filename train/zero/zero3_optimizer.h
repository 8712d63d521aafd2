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
//             skips the same steps (train/optim/adamw_step_core.h); then AdamW on the rank's
//             chunks only, and the updated fp32 master chunk is cast into the rank's
//             working-dtype shard. No collective: the next forward gathers the new values.
// The buckets are the partitioner's trainable flat groups (one per module, so a rank's
// optimizer chunk and its parameter shard are the same elements), followed by buckets of
// reduce_bucket_size over the trainable parameters kept whole (persistent): those are
// all-gathered after the update, as stages 1 and 2 do for everything (train/zero/zero_engine.h
// has what the stages share).
//
// With optimizer offload (offload_optimizer {device: cpu}) the rank's fp32 master chunks and
// Adam moments live in host memory and the CPU Adam updates them (train/optim/optimizer_offload.h,
// as stages 1 and 2 use it): the fp32 gradient chunks go to the host in tiles, and the new
// working-dtype chunks come back into the shards; the rest of the step is unchanged.
//
// With parameter offload (offload_param {device: cpu}) the shards the step writes into live in
// host memory (train/zero/zero3_partitioner.h, Parameter offload): the new working-dtype chunk,
// computed on the device or by the CPU Adam, is copied into them.
//
// Checkpoints hold the optimizer state per parameter name: each rank writes the slices it
// holds (held_state) and reads back those it needs, so a checkpoint resumes on any number of
// ranks and any stage (train/checkpoint/optimizer_state_files.h).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "distributed/communicator.h"
#include "models/model.h"
#include "train/optim/optimizer.h"
#include "train/zero/zero3_partitioner.h"
#include "train/zero/zero_config.h"
#include "train/zero/zero_engine.h"
#include "train/zero/zero_layout.h"

namespace zt::train {

class Zero3Optimizer : public ZeroEngine {
 public:
  // Partitions `model` (its trainable parameters are `trainable`) and keeps fp32 state for
  // this rank's chunks (in host memory with `offload`). zero.stage3_param_persistence_threshold
  // and reduce_bucket_size apply.
  Zero3Optimizer(models::CausalLM& model, const std::vector<TrainableParameter>& trainable,
                 const OptimizerConfig& config, distributed::Communicator& communicator, const ZeroConfig& zero,
                 const OffloadOptions& offload = {});

  StepResult step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) override;
  // Collective: the shards take the new masters, the persistent buckets are all-gathered.
  void refresh_working_weights() override;
  HeldBuffers held_buffers() const override;

  // A micro-batch's gathers are what the next one prefetches along.
  void begin_micro_batch() override { partitioner_->begin_pass(); }
  void end_micro_batch() override { partitioner_->end_pass(); }
  // Saving and loading go through host memory, module by module, never whole on a GPU.
  void with_whole_weights(bool only_trainable, const std::function<void()>& use) override;
  void load_weights(bool only_trainable, const std::function<void()>& load) override;

  Zero3Partitioner& partitioner() { return *partitioner_; }
  const Zero3Partitioner& partitioner() const { return *partitioner_; }

 private:
  ZeroLayout bucket_layout(std::int64_t reduce_bucket_size);
  // A flat group's bucket is the rank's shard: its master starts from it and updates go to it.
  Tensor initial_values(std::size_t bucket, const OwnedPiece& piece) const override;
  void write_working_weights(std::size_t bucket, const Tensor& chunk) override;
  void log_summary(const ZeroConfig& zero) const;
  void log_offload_copies_once(std::int64_t step);

  std::unique_ptr<Zero3Partitioner> partitioner_;
  std::vector<std::size_t> group_of_;  // per bucket: its partitioner group, or kWhole (persistent)
  bool offload_reported_ = false;
};

}  // namespace zt::train
