// ZeRO stages 0-2 over a Communicator, with the single-device optimizer's contract. Read
// with train/zero/zero_layout.h:
//   stage 0  every rank owns everything; each bucket's gradients are all-reduced as soon as
//            backward has produced all of them.
//   stage 1  a rank owns one chunk of every bucket: fp32 master weights and Adam moments for
//            it only. Gradients accumulate in full locally and are reduce-scattered at the
//            accumulation boundary.
//   stage 2  as stage 1, but each bucket is reduce-scattered during backward as soon as it is
//            complete, and a rank keeps only the fp32 gradient of its own chunk.
// After the update each rank writes its chunk in the working dtype and the chunks are
// all-gathered into every rank's parameters. Gradients are summed over ranks: the trainer
// normalises the loss by the label tokens of the whole global batch. With offload (stages 1
// and 2) a rank's master weights and moments live in host memory and its gradient chunk goes
// there to be applied (train/optim/optimizer_offload.h); the gather is unchanged.
#pragma once

#include <memory>
#include <vector>

#include "distributed/communicator.h"
#include "train/optim/optimizer.h"
#include "train/zero/zero_layout.h"

namespace zt::train {

class ZeroOptimizer : public OptimizerEngine {
 public:
  ZeroOptimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
                distributed::Communicator& communicator, int stage, std::int64_t bucket_numel,
                const OffloadOptions& offload = {});
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;

  StepResult step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) override;
  void zero_grad() override;
  // Collective: every rank must call it.
  std::map<std::string, Tensor> state_dict() const override;
  // This rank's pieces of each bucket; stage 0: everything, on every rank.
  std::vector<StateSlice> held_state() const override;
  bool replicated_state() const override { return stage_ == 0; }
  // Collective: every bucket's chunks all-gathered into the working weights.
  void refresh_working_weights() override;

  const ZeroLayout& layout() const { return layout_; }
  // fp32 elements of optimizer state this rank holds (master + moments + gradients).
  std::int64_t state_numel() const;
  // Null without offload.
  const OptimizerOffload* offload() const { return offload_.get(); }

 private:
  void on_gradient(std::size_t parameter, const Tensor& grad);
  void reduce_bucket(std::size_t bucket);
  void reduce_accumulated_gradients();
  double global_grad_norm() const;
  void offload_state(const OffloadOptions& options);
  void step_offloaded(const ops::AdamWConfig& adam);
  Tensor working_chunk(std::size_t bucket) const;  // this rank's chunk of master, in the working dtype
  void gather_working_weights(std::size_t bucket, const Tensor& chunk);
  Tensor owned(const Tensor& partition, std::size_t bucket) const;  // this rank's chunk of bucket b
  Tensor flat_parameter(std::size_t parameter) const;

  std::vector<TrainableParameter> parameters_;
  OptimizerConfig config_;
  distributed::Communicator& comm_;
  int stage_;
  int rank_;
  Device device_;  // the parameters' (and gradients'); master and moments are on the host with offload
  ZeroLayout layout_;
  std::vector<std::size_t> bucket_of_;   // parameter -> bucket
  std::vector<std::size_t> slot_of_;     // parameter -> position inside its bucket
  std::vector<Tensor> staging_;          // per bucket: its fp32 gradients before reduction
  std::vector<std::size_t> ready_;       // per bucket: gradients arrived this backward
  std::vector<Tensor> full_grads_;       // stage 1: fp32 gradient of every parameter
  Tensor master_, exp_avg_, exp_avg_sq_, grads_;  // this rank's partition, fp32
  std::unique_ptr<OptimizerOffload> offload_;
};

}  // namespace zt::train
