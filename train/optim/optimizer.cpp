#include "train/optim/optimizer.h"

#include <cmath>
#include <utility>

#include "ops/elementwise/accumulate.h"
#include "ops/optim/adamw.h"
#include "ops/optim/l2norm.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::train {
namespace {

Tensor fp32_copy(const Tensor& value) {
  Tensor copy = Tensor::empty(value.shape(), DType::kF32, value.device());
  copy.copy_from(value);
  return copy;
}

double read_scalar(const Tensor& t) { return t.to(Device::cpu()).to_vector().at(0); }

}  // namespace

bool decays(const std::string& name, const Tensor& value) {
  const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  return !is_bias && value.dim() >= 2;
}

DType offload_working_dtype(const std::vector<TrainableParameter>& parameters) {
  ZT_REQUIRE(!parameters.empty(), "optimizer offload: nothing to train");
  const DType dtype = parameters[0].variable.data().dtype();
  for (const TrainableParameter& p : parameters)
    ZT_REQUIRE(p.variable.data().dtype() == dtype,
               "optimizer offload: parameter '" + p.name + "' is " + dtype_name(p.variable.data().dtype()) + " but '" +
                   parameters[0].name + "' is " + dtype_name(dtype) + "; offload needs one dtype for all trainable "
                   "parameters");
  return dtype;
}

Optimizer::Optimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
                     const OffloadOptions& offload)
    : parameters_(std::move(parameters)), config_(config) {
  for (const TrainableParameter& p : parameters_)
    ZT_REQUIRE(p.variable.is_leaf() && p.variable.requires_grad(),
               "optimizer: parameter '" + p.name + "' is not a trainable leaf");
  if (offload.enabled) offload_state(offload);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const autograd::Variable& variable = parameters_[i].variable;
    if (!offload_) {
      const Tensor& value = variable.data();
      master_.push_back(fp32_copy(value));
      exp_avg_.push_back(Tensor::zeros(value.shape(), DType::kF32, value.device()));
      exp_avg_sq_.push_back(Tensor::zeros(value.shape(), DType::kF32, value.device()));
      grads_.push_back(Tensor::zeros(value.shape(), DType::kF32, value.device()));
    }
    variable.add_grad_ready_hook([this, i](const Tensor& grad) {
      Tensor contribution = grad;  // the hook's argument is the leaf's slot, cleared next
      ops::accumulate_(grads_[i], contribution);
      parameters_[i].variable.zero_grad();
    });
  }
}

// Every parameter laid end to end: master and moments in the offload's host buffers, the
// gradients in one device buffer; the per-parameter tensors are views into them.
void Optimizer::offload_state(const OffloadOptions& options) {
  const DType working = offload_working_dtype(parameters_);
  const Device device = parameters_[0].variable.data().device();
  std::vector<OffloadSegment> segments;
  std::int64_t total = 0;
  for (const TrainableParameter& p : parameters_) {
    offsets_.push_back(total);
    segments.push_back({total, p.variable.data().numel(), p.weight_decay ? config_.weight_decay : 0.0});
    total += p.variable.data().numel();
  }
  Tensor initial = Tensor::empty({total}, DType::kF32);
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    initial.narrow(0, offsets_[i], segments[i].numel).copy_from(parameters_[i].variable.data().reshape({segments[i].numel}));
  offload_ = std::make_unique<OptimizerOffload>(initial, segments, working, device, config_, options);
  flat_grads_ = Tensor::zeros({total}, DType::kF32, device);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Shape& shape = parameters_[i].variable.data().shape();
    auto part = [&](const Tensor& flat) { return flat.narrow(0, offsets_[i], segments[i].numel).view(shape); };
    master_.push_back(part(offload_->master()));
    exp_avg_.push_back(part(offload_->exp_avg()));
    exp_avg_sq_.push_back(part(offload_->exp_avg_sq()));
    grads_.push_back(part(flat_grads_));
  }
}

std::int64_t Optimizer::numel() const {
  std::int64_t total = 0;
  for (const Tensor& m : master_) total += m.numel();
  return total;
}

StepResult Optimizer::step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) {
  StepResult result;
  const double scaled_norm = grads_.empty() ? 0.0 : read_scalar(ops::l2_norm(grads_));
  result.grad_norm = scaled_norm / loss_scale;
  if (!std::isfinite(scaled_norm)) {
    result.skipped = true;
    return result;
  }
  // DeepSpeed's combined divisor: the loss scale, times the clip factor when the norm exceeds it.
  double divisor = loss_scale;
  if (max_grad_norm > 0.0) divisor *= std::max(1.0, (result.grad_norm + 1e-6) / max_grad_norm);
  const ops::AdamWConfig adam{.lr = lr, .beta1 = config_.beta1, .beta2 = config_.beta2, .eps = config_.eps,
                              .step = step, .grad_scale = divisor};
  if (offload_) {
    step_offloaded(adam);
    return result;
  }
  std::vector<ops::AdamWParam> params;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    double decay = parameters_[i].weight_decay ? config_.weight_decay : 0.0;
    if (!config_.decoupled_weight_decay && decay != 0.0) {
      // Adam with L2 regularisation: the decay joins the (scaled) gradient instead.
      ops::accumulate_(grads_[i], master_[i], decay * divisor);
      decay = 0.0;
    }
    params.push_back({master_[i], exp_avg_[i], exp_avg_sq_[i], grads_[i], parameters_[i].variable.data(), decay});
  }
  // One update over every parameter: a few launches on the GPU instead of one per parameter.
  ops::adamw_step_multi(params, adam);
  return result;
}

void Optimizer::step_offloaded(const ops::AdamWConfig& adam) {
  const Tensor working = offload_->step(flat_grads_, adam);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor value = parameters_[i].variable.data();  // a handle: the copy writes the parameter
    value.copy_from(working.narrow(0, offsets_[i], value.numel()).view(value.shape()));
  }
  offload_->log_report_once();
}

void Optimizer::zero_grad() {
  for (Tensor& grad : grads_) grad.zero_();
}

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> state;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const std::string& name = parameters_[i].name;
    state[name + ".master"] = master_[i];
    state[name + ".exp_avg"] = exp_avg_[i];
    state[name + ".exp_avg_sq"] = exp_avg_sq_[i];
  }
  return state;
}

std::vector<StateSlice> Optimizer::held_state() const {
  std::vector<StateSlice> slices;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const std::int64_t n = master_[i].numel();
    slices.push_back({parameters_[i].name, master_[i].shape(), 0, n, master_[i].reshape({n}),
                      exp_avg_[i].reshape({n}), exp_avg_sq_[i].reshape({n})});
  }
  return slices;
}

void Optimizer::refresh_working_weights() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor working = parameters_[i].variable.data();  // a handle: the copy writes the parameter
    working.copy_from(master_[i]);
  }
}

void OptimizerEngine::load_state_dict(const std::map<std::string, Tensor>& state) {
  for (const StateSlice& slice : held_state()) {
    for (auto [suffix, target] : {std::pair{".master", &slice.master}, std::pair{".exp_avg", &slice.exp_avg},
                                  std::pair{".exp_avg_sq", &slice.exp_avg_sq}}) {
      auto it = state.find(slice.name + suffix);
      ZT_REQUIRE(it != state.end(), "optimizer state has no '" + slice.name + suffix + "': the checkpoint was saved "
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

}  // namespace zt::train
