#include "train/zero/zero_optimizer.h"

#include <utility>

#include "ops/elementwise/accumulate.h"
#include "runtime/error.h"

namespace zt::train {

ZeroOptimizer::ZeroOptimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
                             distributed::Communicator& communicator, int stage, std::int64_t bucket_numel,
                             const OffloadOptions& offload, const GradientReduction& reduction)
    : ZeroEngine(communicator, stage, parameters.empty() ? Device::cpu() : parameters[0].variable.data().device(),
                 parameters.empty() ? DType::kF32 : parameters[0].variable.data().dtype(), reduction) {
  ZT_REQUIRE(!parameters.empty(), "ZeRO: nothing to train");
  std::vector<std::int64_t> numels;
  std::vector<Parameter> described;
  for (const TrainableParameter& p : parameters) {
    const Tensor& value = p.variable.data();
    numels.push_back(value.numel());
    described.push_back({p.name, p.variable, value.shape(), p.weight_decay});
  }
  // Stage 0 replicates the optimizer: one "owner" holding everything, on every rank.
  ZeroLayout layout = make_zero_layout(numels, stage_ == 0 ? 1 : comm_.world_size(), bucket_numel);
  if (stage_ == 1)
    for (std::int64_t numel : numels) full_grads_.push_back(Tensor::zeros({numel}, whole_gradient_dtype(), device_));
  hold_state(std::move(layout), std::move(described), config, parameters, offload);
}

void ZeroOptimizer::on_gradient(std::size_t parameter, const Tensor& grad) {
  if (stage_ == 1) return ops::accumulate_(full_grads_[parameter], grad.reshape({grad.numel()}));
  ZeroEngine::on_gradient(parameter, grad);
}

// Stage 1 at the accumulation boundary: each bucket's full gradients reduce-scattered.
void ZeroOptimizer::reduce_accumulated_gradients() {
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    for (std::size_t k = 0; k < layout_.buckets[b].parameters.size(); ++k)
      buckets().add(b, k, full_grads_[layout_.buckets[b].parameters[k]]);
}

StepResult ZeroOptimizer::step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) {
  if (stage_ == 1) reduce_accumulated_gradients();
  return finish_step({lr, loss_scale, max_grad_norm, step});
}

void ZeroOptimizer::zero_grad() {
  ZeroEngine::zero_grad();
  for (Tensor& grad : full_grads_) grad.zero_();
}

std::int64_t ZeroOptimizer::state_numel() const {
  std::int64_t n = 4 * layout_.partition_numel;
  for (const Tensor& grad : full_grads_) n += grad.numel();
  return n;
}

HeldBuffers ZeroOptimizer::held_buffers() const {
  HeldBuffers held = ZeroEngine::held_buffers();
  for (const Tensor& grad : full_grads_) held.gradient_bytes += static_cast<std::int64_t>(grad.nbytes());
  return held;
}

}  // namespace zt::train
