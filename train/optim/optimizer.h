// The single-device optimizer under the trainer: fp32 master weights, fp32 Adam moments and
// fp32 gradient buffers for the trainable parameters; gradients are added into those
// buffers by gradient-ready hooks as backward produces them (the working-dtype gradient is
// dropped at once), then one step unscales, measures the global norm, clips, skips on a
// non-finite gradient, runs AdamW and writes the working weights. The ZeRO partitioner
// replaces this class with one that owns a slice of each buffer per rank.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "train/deepspeed/deepspeed_config.h"
#include "train/optim/optimizer_offload.h"

namespace zt::train {

struct TrainableParameter {
  std::string name;
  autograd::Variable variable;  // a leaf that requires grad, in the working dtype
  bool weight_decay = true;     // HF: false for biases and norm weights
};

struct StepResult {
  bool skipped = false;    // a gradient was inf/NaN: nothing was updated
  double grad_norm = 0.0;  // global L2 norm of the unscaled gradients, before clipping
};

// The part of one parameter's optimizer state that a rank holds: elements [begin, end) of
// the flattened parameter, with 1-D views of end - begin elements into the rank's fp32 master
// weights and Adam moments (on the device, or in host memory with offload). Checkpoints are
// written and read through these views, so each rank saves and loads only what it holds.
struct StateSlice {
  std::string name;  // the parameter's
  Shape shape;       // the whole parameter's
  std::int64_t begin = 0;
  std::int64_t end = 0;
  Tensor master, exp_avg, exp_avg_sq;
};

// What the trainer steps: this single-device optimizer, or ZeRO's partitioned one
// (train/zero/zero_optimizer.h) with the same contract.
class OptimizerEngine {
 public:
  virtual ~OptimizerEngine() = default;
  // One update from the accumulated gradients. `loss_scale` is what the loss was multiplied
  // by (1 without fp16), `max_grad_norm` 0 disables clipping, `step` counts from 1.
  virtual StepResult step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) = 0;
  // Clears the accumulated gradients for the next accumulation window.
  virtual void zero_grad() = 0;
  // Optimizer state per parameter name ("<name>.exp_avg", "<name>.exp_avg_sq",
  // "<name>.master"), whole, independent of how parameters are laid out or partitioned.
  // Collective under ZeRO; checkpoints use held_state() instead, which gathers nothing.
  virtual std::map<std::string, Tensor> state_dict() const = 0;

  // The state this rank holds: at most one slice per parameter, none for padding.
  virtual std::vector<StateSlice> held_state() const = 0;
  // True when every rank holds the same whole state (ZeRO stage 0): one rank saves it.
  virtual bool replicated_state() const { return false; }
  // After new values were written into held_state()'s views: the working weights take the
  // new masters. Collective under ZeRO.
  virtual void refresh_working_weights() = 0;

  // Sets the held state from whole tensors by name (state_dict()'s form; extra names are
  // ignored), then refreshes the working weights. Collective under ZeRO.
  void load_state_dict(const std::map<std::string, Tensor>& state);
};

// With offload, master weights and moments live in host memory (train/optim/optimizer_offload.h)
// and the gradients, laid end to end in one device buffer, go there to be applied.
class Optimizer : public OptimizerEngine {
 public:
  Optimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
            const OffloadOptions& offload = {});
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  StepResult step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) override;
  void zero_grad() override;

  // The fp32 gradient buffer of parameter `i` (what the hooks accumulate into).
  const Tensor& gradient(std::size_t i) const { return grads_[i]; }
  const std::vector<TrainableParameter>& parameters() const { return parameters_; }
  std::int64_t numel() const;

  std::map<std::string, Tensor> state_dict() const override;
  std::vector<StateSlice> held_state() const override;
  void refresh_working_weights() override;

  // Null without offload.
  const OptimizerOffload* offload() const { return offload_.get(); }

 private:
  void offload_state(const OffloadOptions& options);
  void step_offloaded(const ops::AdamWConfig& adam);

  std::vector<TrainableParameter> parameters_;
  OptimizerConfig config_;
  std::vector<Tensor> master_, exp_avg_, exp_avg_sq_, grads_;
  // Offload only: where each parameter starts in the flat buffers, and the gradients'.
  std::vector<std::int64_t> offsets_;
  Tensor flat_grads_;
  std::unique_ptr<OptimizerOffload> offload_;
};

// HF's grouping: no weight decay for biases and for norm weights (1-D parameters).
bool decays(const std::string& name, const Tensor& value);

// The one dtype of every parameter, which offload writes back; mixed dtypes are an error.
DType offload_working_dtype(const std::vector<TrainableParameter>& parameters);

}  // namespace zt::train
