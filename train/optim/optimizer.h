// The single-device optimizer under the trainer: fp32 master weights, fp32 Adam moments and
// fp32 gradient buffers for the trainable parameters, laid end to end (the gradients held only
// from a step's first gradient to its update, a module's segment at a time, without offload:
// train/optim/gradient_segments.h); gradients are added into those buffers by GEMM epilogues
// and gradient-ready hooks as backward produces them (the working-dtype gradient is dropped at
// once), then one step unscales, measures the global norm, clips,
// skips on a non-finite gradient, runs AdamW and writes the working weights (the step itself
// is train/optim/adamw_step_core.h, shared with ZeRO's engines, which own a slice of each
// buffer per rank).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "train/optim/optimizer_config.h"
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

// The buffers an optimizer engine has allocated on this rank, for the start-up memory report.
struct HeldBuffers {
  std::int64_t state_numel = 0;               // fp32 master weights; each Adam moment has as many
  std::int64_t gradient_bytes = 0;            // gradients on the device: the owned fp32 ones, accumulation and staging
  std::optional<std::int64_t> working_bytes;  // working weights the engine holds itself (ZeRO-3); none: the model's
  std::int64_t host_working_bytes = 0;        // working weights in host memory (ZeRO-3 parameter offload)
  const OptimizerOffload* offload = nullptr;  // where master and moments are, with offload
};

// What the trainer steps: this single-device optimizer, or ZeRO's partitioned ones
// (train/zero/zero_optimizer.h, train/zero/zero3_optimizer.h) with the same contract.
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

  virtual HeldBuffers held_buffers() const = 0;
  // The last step's offload work; nullopt without optimizer offload.
  virtual std::optional<OffloadStepTimes> offload_times() const { return std::nullopt; }

  // Applies an update still running behind the training (optimizer offload's delayed update,
  // OffloadOptions::delayed_update) to the weights and the state: before they are evaluated,
  // saved or handed back at the end. Collective under ZeRO.
  virtual void settle() {}

  // The training loop's hooks into an engine that partitions the model's weights (ZeRO-3);
  // the others hold them whole and need nothing.
  // One micro-batch's forward and backward run between these.
  virtual void begin_micro_batch() {}
  virtual void end_micro_batch() {}
  // Runs `use` where the model's weights are whole and readable: on every rank, or under
  // ZeRO-3 (collective) on rank 0 only, into whose host memory they are gathered module by
  // module; only the trainable ones when `only_trainable`.
  virtual void with_whole_weights(bool only_trainable, const std::function<void()>& use);
  // Runs `load`, which writes values into the model's weights (only the trainable ones when
  // `only_trainable`): in place, or under ZeRO-3 into whole host tensors of which each rank
  // then keeps its shards.
  virtual void load_weights(bool only_trainable, const std::function<void()>& load);
};

class AdamWStepCore;

// With offload, master weights and moments live in host memory (train/optim/optimizer_offload.h)
// and the gradients go there to be applied.
class Optimizer : public OptimizerEngine {
 public:
  Optimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
            const OffloadOptions& offload = {});
  ~Optimizer() override;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  StepResult step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) override;
  void zero_grad() override;
  void settle() override;

  // The fp32 gradient buffer of parameter `i` (what the hooks accumulate into); without
  // offload its segment is allocated, zeroed, when first asked for in a step
  // (train/optim/gradient_segments.h).
  Tensor gradient(std::size_t i) const;
  const std::vector<TrainableParameter>& parameters() const { return parameters_; }
  std::int64_t numel() const;

  std::map<std::string, Tensor> state_dict() const override;
  std::vector<StateSlice> held_state() const override;
  void refresh_working_weights() override;
  HeldBuffers held_buffers() const override;
  std::optional<OffloadStepTimes> offload_times() const override;

  // Null without offload.
  const OptimizerOffload* offload() const;

 private:
  void write_parameters(const Tensor& partition);

  std::vector<TrainableParameter> parameters_;
  std::unique_ptr<AdamWStepCore> core_;
};

// HF's grouping: no weight decay for biases and for norm weights (1-D parameters).
bool decays(const std::string& name, const Tensor& value);

// The parameters as `config`'s optimizer groups them: as given, or every one decayed when the
// optimizer is a DeepSpeed config's (OptimizerConfig::decays_every_parameter).
std::vector<TrainableParameter> weight_decay_groups(std::vector<TrainableParameter> parameters,
                                                    const OptimizerConfig& config);

// The one dtype of every parameter, which offload writes back; mixed dtypes are an error.
DType offload_working_dtype(const std::vector<TrainableParameter>& parameters);

}  // namespace zt::train
