#include "train/optim/optimizer.h"

#include <utility>

#include "ops/elementwise/accumulate.h"
#include "runtime/error.h"
#include "train/optim/adamw_step_core.h"

namespace zt::train {

bool decays(const std::string& name, const Tensor& value) {
  const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  return !is_bias && value.dim() >= 2;
}

std::vector<TrainableParameter> weight_decay_groups(std::vector<TrainableParameter> parameters,
                                                    const OptimizerConfig& config) {
  if (config.decays_every_parameter)
    for (TrainableParameter& p : parameters) p.weight_decay = true;
  return parameters;
}

DType offload_working_dtype(const std::vector<TrainableParameter>& parameters) {
  ZT_REQUIRE(!parameters.empty(), "optimizer offload: nothing to train");
  const DType dtype = parameters[0].variable.data().dtype();
  for (const TrainableParameter& p : parameters)
    ZT_REQUIRE(p.variable.data().dtype() == dtype, "optimizer offload: parameter '" + p.name + "' is " +
                                                       dtype_name(p.variable.data().dtype()) + " but '" +
                                                       parameters[0].name + "' is " + dtype_name(dtype) +
                                                       "; offload needs one dtype for all trainable "
                                                       "parameters");
  return dtype;
}

Optimizer::Optimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
                     const OffloadOptions& offload)
    : parameters_(std::move(parameters)) {
  for (const TrainableParameter& p : parameters_)
    ZT_REQUIRE(p.variable.is_leaf() && p.variable.requires_grad(),
               "optimizer: parameter '" + p.name + "' is not a trainable leaf");
  OwnedPartition owned;
  for (const TrainableParameter& p : parameters_) {
    const Tensor& value = p.variable.data();
    owned.spans.push_back({p.name, value.shape(), 0, owned.numel, value.numel(), p.weight_decay, p.variable});
    owned.initial.push_back(value.reshape({value.numel()}));
    owned.numel += value.numel();
  }
  const Device device = parameters_.empty() ? Device::cpu() : parameters_[0].variable.data().device();
  // Without offload the gradients are held from a step's first one to its update only.
  owned.segmented_gradients = !offload.enabled;
  core_ = std::make_unique<AdamWStepCore>(config, std::move(owned), device, offload, parameters_);
  const Device gradient_device = core_->gradients_in_host_block() ? Device::cpu() : device;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    // Linear layers add their weight gradients straight into the buffer (their GEMM's
    // epilogue), asking for it as they do, where it lies on the parameter's device; whatever
    // arrives as a tensor is added by the hook.
    if (parameters_[i].variable.data().device() == gradient_device)
      parameters_[i].variable.set_grad_sink_source([this, i] { return gradient(i); });
    parameters_[i].variable.add_grad_ready_hook([this, i](const Tensor& grad) {
      Tensor contribution = grad;  // the hook's argument is the leaf's slot, cleared next
      ops::accumulate_(gradient(i), contribution);
      parameters_[i].variable.zero_grad();
    });
  }
}

Tensor Optimizer::gradient(std::size_t i) const { return core_->span_gradient(i).view(core_->spans().at(i).shape); }

// The model may outlive this optimizer: its gradients go back to being delivered.
Optimizer::~Optimizer() {
  for (const TrainableParameter& p : parameters_) p.variable.set_grad_sink(Tensor());
}

std::int64_t Optimizer::numel() const { return core_->numel(); }

const OptimizerOffload* Optimizer::offload() const { return core_->offload(); }

StepResult Optimizer::step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) {
  // Without offload the update writes the parameters itself (OwnedSpan::writes).
  return core_->step({lr, loss_scale, max_grad_norm, step}, local_gradient_norm(core_->span_gradients()),
                     [this](const Tensor& offloaded) {
                       if (offloaded.defined()) write_parameters(offloaded);
                     });
}

void Optimizer::settle() {
  core_->settle([this](const Tensor& offloaded) { write_parameters(offloaded); });
}

// Every parameter takes its run of `partition` (new weights, or the masters).
void Optimizer::write_parameters(const Tensor& partition) {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor value = parameters_[i].variable.data();  // a handle: the copy writes the parameter
    value.copy_from(partition.narrow(0, core_->spans()[i].offset, value.numel()).view(value.shape()));
  }
}

void Optimizer::zero_grad() { core_->zero_grad(); }

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> state;
  for (const StateSlice& slice : held_state()) {
    state[slice.name + ".master"] = slice.master.view(slice.shape);
    state[slice.name + ".exp_avg"] = slice.exp_avg.view(slice.shape);
    state[slice.name + ".exp_avg_sq"] = slice.exp_avg_sq.view(slice.shape);
  }
  return state;
}

std::vector<StateSlice> Optimizer::held_state() const { return core_->held_state(); }

void Optimizer::refresh_working_weights() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const OwnedSpan& span = core_->spans()[i];
    Tensor value = parameters_[i].variable.data();  // a handle: the copy writes the parameter
    value.copy_from(core_->state_range(AdamWStepCore::StatePart::kMaster, span.offset, span.numel).view(value.shape()));
  }
}

HeldBuffers Optimizer::held_buffers() const {
  return {.state_numel = numel(),
          .gradient_bytes = numel() * static_cast<std::int64_t>(sizeof(float)),
          .working_bytes = std::nullopt,
          .offload = offload()};
}

void OptimizerEngine::with_whole_weights(bool /*only_trainable*/, const std::function<void()>& use) { use(); }

void OptimizerEngine::load_weights(bool /*only_trainable*/, const std::function<void()>& load) { load(); }

void OptimizerEngine::load_state_dict(const std::map<std::string, Tensor>& state) {
  for (const StateSlice& slice : held_state()) {
    for (auto [suffix, target] : {std::pair{".master", &slice.master}, std::pair{".exp_avg", &slice.exp_avg},
                                  std::pair{".exp_avg_sq", &slice.exp_avg_sq}}) {
      auto it = state.find(slice.name + suffix);
      ZT_REQUIRE(it != state.end(), "optimizer state has no '" + slice.name + suffix +
                                        "': the checkpoint was saved "
                                        "for other trainable parameters (another --finetuning_type or model?)");
      ZT_REQUIRE(it->second.numel() == shape_numel(slice.shape),
                 "optimizer state '" + slice.name + suffix + "' has shape " + shape_str(it->second.shape()) +
                     " but the parameter has " + shape_str(slice.shape));
      Tensor view = *target;  // a handle: the copy writes the optimizer's state
      view.copy_from(it->second.reshape({it->second.numel()}).narrow(0, slice.begin, slice.end - slice.begin));
    }
  }
  refresh_working_weights();
}

std::optional<OffloadStepTimes> Optimizer::offload_times() const { return core_->offload_times(); }

}  // namespace zt::train
