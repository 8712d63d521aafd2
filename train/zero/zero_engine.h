// What ZeRO's optimizer engines share: stages 0-2 (train/zero/zero_optimizer.h) and stage 3
// (train/zero/zero3_optimizer.h). Read with train/zero/zero_layout.h (the buckets over ranks)
// and train/optim/adamw_step_core.h (the step).
//
// The trainable parameters lie in buckets; a rank owns one chunk of every bucket (stage 0:
// rank 0's layout, everything, on every rank), and its chunks together are its partition of
// fp32 master weights, Adam moments and gradients (see below for their dtype). Backward hands each gradient to its
// bucket (train/zero/gradient_buckets.h): staged in the communication dtype while the bucket
// fills, then reduced over ranks into the rank's gradient chunk (all-reduced at stage
// 0, reduce-scattered from stage 1 on; stage 1 hands over its accumulated gradients at the
// boundary instead) and freed. That chunk is fp32, except under stages 1 and 2 over several
// ranks, where it takes DeepSpeed's grad_accum_dtype (by default the working dtype: the
// ZeRO paper's 16-bit gradients); with optimizer offload it is fp32 in host memory, as
// DeepSpeed keeps it, so the device holds no gradient partition. Stages 0-2 stage at most two buckets at once. The
// step agrees on the norm over ranks, runs AdamW over the owned pieces and writes each bucket's new chunk, in the
// working dtype, back: all-gathered into every rank's whole parameters, unless an engine keeps its weights otherwise.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "distributed/communicator.h"
#include "train/optim/adamw_step_core.h"
#include "train/optim/optimizer.h"
#include "train/zero/gradient_buckets.h"
#include "train/zero/zero_layout.h"

namespace zt::train {

class ZeroEngine : public OptimizerEngine {
 public:
  ZeroEngine(const ZeroEngine&) = delete;
  ZeroEngine& operator=(const ZeroEngine&) = delete;

  void zero_grad() override;
  // Collective: a delayed update's weights are all-gathered as a step's are.
  void settle() override {
    core_->settle([this](const Tensor& offloaded) { write_all_working_weights(offloaded); });
  }
  // Collective: every rank must call it. The tensors are in host memory.
  std::map<std::string, Tensor> state_dict() const override;
  // This rank's pieces of each bucket; stage 0: everything, on every rank.
  std::vector<StateSlice> held_state() const override;
  bool replicated_state() const override { return stage_ == 0; }
  HeldBuffers held_buffers() const override;
  // The update's offload work and, with the gradients in host memory, the step's additions.
  std::optional<OffloadStepTimes> offload_times() const override { return offload_times_; }

  // The optimizer's buckets over ranks.
  const ZeroLayout& layout() const { return layout_; }
  // The most bytes of gradient staging (bucket buffers and reduction outputs) held at once so
  // far; held_buffers() counts what is held now.
  std::int64_t most_staged_gradient_bytes() const { return buckets_->most_staged_bytes(); }
  // Null without offload.
  const OptimizerOffload* offload() const { return core_->offload(); }

 protected:
  // A parameter as the layout's indices name it.
  struct Parameter {
    std::string name;
    autograd::Variable variable;  // its working weights (under ZeRO-3 whole only when persistent)
    Shape shape;
    bool decays = false;
  };

  // `gradient_dtype` is what backward delivers (the working dtype), the collectives' dtype
  // unless `reduction` names another.
  ZeroEngine(distributed::Communicator& communicator, int stage, Device device, DType gradient_dtype,
             GradientReduction reduction);
  // The rest of construction, once the engine has laid its parameters out: the fp32 state of
  // this rank's pieces (master weights from initial_values) and a gradient hook on every
  // parameter in a bucket. `trainable` gives the dtype that offload writes back.
  void hold_state(ZeroLayout layout, std::vector<Parameter> parameters, const OptimizerConfig& config,
                  const std::vector<TrainableParameter>& trainable, const OffloadOptions& offload);

  // Where a bucket's working weights come from and go back to: by default the whole
  // parameters, all-gathered after an update.
  virtual Tensor initial_values(std::size_t bucket, const OwnedPiece& piece) const;
  virtual void write_working_weights(std::size_t bucket, const Tensor& chunk);
  // A gradient from backward: by default into its bucket.
  virtual void on_gradient(std::size_t parameter, const Tensor& grad);
  // The dtype of the rank's gradient partition: fp32, or
  // under stages 1 and 2 over several ranks without optimizer offload, the working dtype
  // unless GradientReduction::accumulation says fp32 (DeepSpeed's grad_accum_dtype).
  DType gradient_partition_dtype(bool offload) const;
  // Stage 1's whole gradients (train/zero/zero_config.h's whole_gradient_dtype).
  DType whole_gradient_dtype() const;
  // Reduces what the buckets still stage (at the end of a backward, and before a step).
  void finish_reductions() { buckets_->finish(); }

  // The step once the engine's gradients are in: buckets that backward left incomplete (a
  // parameter got no gradient) are reduced, the norm agreed, the owned pieces updated and
  // the working weights written.
  StepResult finish_step(const StepRequest& request);
  // Collective: the working weights take the masters.
  void write_working_weights_from_masters() { write_all_working_weights(Tensor()); }

  // This rank's chunk of bucket b of a partition.
  Tensor owned(const Tensor& partition, std::size_t bucket) const;
  const AdamWStepCore& core() const { return *core_; }
  GradientBuckets& buckets() { return *buckets_; }
  const GradientBuckets& buckets() const { return *buckets_; }
  // "stage 2 reduce-scatter gradients, bucket 3": a collective's label in the --zero_trace trace.
  std::string label(const std::string& what, std::size_t bucket) const;

  distributed::Communicator& comm_;
  const int stage_;
  const int rank_;  // the owner of this rank's chunks in the layout: 0 at stage 0
  const Device device_;
  ZeroLayout layout_;
  std::vector<Parameter> parameters_;

 private:
  void place_gradients();
  OwnedPartition owned_partition() const;
  GradientBuckets::Options bucket_options(const OffloadOptions& offload) const;
  std::int64_t usable_device_bytes() const;
  void log_gradient_placement(const OffloadOptions& options) const;
  void log_gradient_partition() const;
  GradientNorm gradient_norm() const;
  void log_host_gradients_once();
  void measure_offload(bool skipped);
  void write_all_working_weights(const Tensor& offloaded);
  DType working_dtype(std::size_t bucket) const;

  const DType gradient_dtype_;
  const GradientReduction reduction_;
  std::unique_ptr<AdamWStepCore> core_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::vector<std::size_t> bucket_of_;  // parameter -> bucket (kNone: not trained)
  std::vector<std::size_t> slot_of_;    // parameter -> position inside its bucket
  bool host_gradients_reported_ = false;
  std::optional<OffloadStepTimes> offload_times_;
  HostGradientStats host_gradients_before_{};  // the sink's totals at the last step
};

}  // namespace zt::train
