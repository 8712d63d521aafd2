// ZeRO stages 0-2 over a Communicator, with the single-device optimizer's contract. Read
// with train/zero/zero_layout.h:
//   stage 0  every rank owns everything; each bucket's gradients are all-reduced as soon as
//            backward has produced all of them.
//   stage 1  a rank owns one chunk of every bucket: fp32 master weights and Adam moments for
//            it only. Gradients accumulate in full locally and are reduce-scattered at the
//            accumulation boundary.
//   stage 2  as stage 1, but each bucket is reduce-scattered during backward as soon as it is
//            complete, every micro-batch, and a rank keeps only the gradient of its own
//            chunk: no full-size gradient outlives the backward step that makes it.
// Over several ranks without offload the gradient partitions of stages 1 and 2 are in
// DeepSpeed's grad_accum_dtype: the working dtype unless the config says fp32
// (ZeroEngine::gradient_partition_dtype); otherwise fp32. Stage 1's whole gradients are in
// grad_accum_dtype with offload too (ZeroEngine::whole_gradient_dtype).
// Gradients are staged and reduced bucket by bucket, at most two buckets at once
// (train/zero/gradient_buckets.h), in DeepSpeed's communication_data_type; with overlap_comm
// a reduction runs while backward goes on.
// After the update each rank writes its chunk in the working dtype and the chunks are
// all-gathered into every rank's parameters; train/zero/zero_engine.h has what the stages
// share with stage 3. Gradients are summed over ranks: the trainer normalises the loss by the
// label tokens of the whole global batch. With offload (stages 1 and 2) a rank's master
// weights and moments live in host memory and its gradient chunk goes there to be applied
// (train/optim/optimizer_offload.h); the gather is unchanged. The stage and the offload are
// taken as given: the zero_optimization reader (train/deepspeed/deepspeed_zero.cpp) checks
// them, and the trainer hands stage 3 to Zero3Optimizer.
#pragma once

#include <vector>

#include "distributed/communicator.h"
#include "train/optim/optimizer.h"
#include "train/zero/zero_engine.h"

namespace zt::train {

class ZeroOptimizer : public ZeroEngine {
 public:
  ZeroOptimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
                distributed::Communicator& communicator, int stage, std::int64_t bucket_numel,
                const OffloadOptions& offload = {}, const GradientReduction& reduction = {});

  StepResult step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) override;
  void zero_grad() override;
  // The end of a backward: what is still staged is reduced (DeepSpeed's epilogue).
  void end_micro_batch() override { finish_reductions(); }
  // Collective: every bucket's chunks all-gathered into the working weights.
  void refresh_working_weights() override { write_working_weights_from_masters(); }
  HeldBuffers held_buffers() const override;

  // Elements of optimizer state this rank holds (fp32 master and moments, gradients).
  std::int64_t state_numel() const;

 private:
  void on_gradient(std::size_t parameter, const Tensor& grad) override;
  void reduce_accumulated_gradients();

  std::vector<Tensor> full_grads_;  // stage 1: every parameter's gradient, in the partition's dtype
};

}  // namespace zt::train
