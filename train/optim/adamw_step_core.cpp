#include "train/optim/adamw_step_core.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "distributed/communicators/collective_label.h"
#include "ops/elementwise/accumulate.h"
#include "ops/optim/adamw.h"
#include "ops/optim/l2norm.h"

namespace zt::train {
namespace {

double l2_norm_of(const std::vector<Tensor>& tensors) {
  return ops::l2_norm(tensors).to(Device::cpu()).to_vector().at(0);
}

}  // namespace

GradientNorm local_gradient_norm(const std::vector<Tensor>& grads) {
  const double norm = l2_norm_of(grads);
  return {.scaled = norm, .overflow = !std::isfinite(norm)};
}

GradientNorm agreed_gradient_norm(distributed::Communicator& comm, const Tensor& grads, Device device,
                                  const std::string& label, DType gpu_dtype) {
  const double local = l2_norm_of({grads});
  const bool local_overflow = !std::isfinite(local);
  Tensor agreed =
      Tensor::from_values({local_overflow ? 0.0 : local * local, local_overflow ? 1.0 : 0.0}, {2}, DType::kF64)
          .to(device);
  if (agreed.device().is_cuda()) agreed = agreed.to(gpu_dtype);
  distributed::CollectiveLabel collective([&] { return label; });
  comm.all_reduce(agreed, distributed::ReduceOp::kSum);
  const std::vector<double> totals = agreed.to(Device::cpu()).to_vector();
  // A sum of finite squares may still overflow the dtype: that step cannot be taken either.
  if (totals[1] > 0.0 || !std::isfinite(totals[0]))
    return {.scaled = std::numeric_limits<double>::infinity(), .overflow = true};
  return {.scaled = std::sqrt(totals[0]), .overflow = false};
}

double clip_divisor(double grad_norm, double loss_scale, double max_grad_norm) {
  double divisor = loss_scale;
  if (max_grad_norm > 0.0) divisor *= std::max(1.0, (grad_norm + 1e-6) / max_grad_norm);
  return divisor;
}

double update_weight_decay(const Tensor& grad, const Tensor& master, double decay, const OptimizerConfig& config,
                           double grad_scale) {
  if (config.decoupled_weight_decay || decay == 0.0) return decay;
  ops::accumulate_(grad, master, decay * grad_scale);
  return 0.0;
}

AdamWStepCore::AdamWStepCore(const OptimizerConfig& config, OwnedPartition owned, Device device,
                             const OffloadOptions& offload, const std::vector<TrainableParameter>& trainable)
    : config_(config), spans_(std::move(owned.spans)) {
  // With offload the initial master is built in host memory and handed over.
  Tensor master = Tensor::zeros({owned.numel}, DType::kF32, offload.enabled ? Device::cpu() : device);
  for (std::size_t i = 0; i < spans_.size(); ++i)
    master.narrow(0, spans_[i].offset, spans_[i].numel).copy_from(owned.initial[i]);
  if (!offload.enabled) {
    grads_ = Tensor::zeros({owned.numel}, DType::kF32, device);
    master_ = master;
    exp_avg_ = Tensor::zeros({owned.numel}, DType::kF32, device);
    exp_avg_sq_ = Tensor::zeros({owned.numel}, DType::kF32, device);
    return;
  }
  std::vector<OffloadSegment> segments;
  for (const OwnedSpan& s : spans_) segments.push_back({s.offset, s.numel, s.decays ? config_.weight_decay : 0.0});
  offload_ = std::make_unique<OptimizerOffload>(master, std::move(segments), offload_working_dtype(trainable), device,
                                                config_, offload);
  master_ = offload_->master();
  exp_avg_ = offload_->exp_avg();
  exp_avg_sq_ = offload_->exp_avg_sq();
  grads_ = offload.gradients_on_host ? offload_->host_grads() : Tensor::zeros({owned.numel}, DType::kF32, device);
}

std::optional<OffloadStepTimes> AdamWStepCore::offload_times() const {
  if (!offload_) return std::nullopt;
  const OffloadStepStats& last = offload_->last_step();
  // The update runs while the device has nothing queued: all of it is waited for.
  return OffloadStepTimes{
      .cpu_seconds = last.adam_seconds, .copy_seconds = last.copy_seconds, .wait_seconds = last.step_seconds};
}

std::vector<StateSlice> AdamWStepCore::held_state() const {
  std::vector<StateSlice> slices;
  for (const OwnedSpan& s : spans_) {
    auto part = [&](const Tensor& t) { return t.narrow(0, s.offset, s.numel); };
    slices.push_back({s.name, s.shape, s.parameter_offset, s.parameter_offset + s.numel, part(master_), part(exp_avg_),
                      part(exp_avg_sq_)});
  }
  return slices;
}

StepResult AdamWStepCore::step(const StepRequest& request, const GradientNorm& norm,
                               const std::function<void(const Tensor& offloaded)>& write_working) {
  const StepResult result{.skipped = norm.overflow, .grad_norm = norm.scaled / request.loss_scale};
  if (result.skipped) return result;
  const ops::AdamWConfig adam{.lr = request.lr,
                              .beta1 = config_.beta1,
                              .beta2 = config_.beta2,
                              .eps = config_.eps,
                              .step = request.step,
                              .grad_scale = clip_divisor(result.grad_norm, request.loss_scale, request.max_grad_norm),
                              // The norm is finite (else the step was skipped above): so is every gradient.
                              .gradients_known_finite = true};
  if (offload_) {
    write_working(offload_->step(grads_, adam));
    offload_->log_report_once();
    return result;
  }
  update_on_device(adam);
  write_working(Tensor());
  return result;
}

// Every span in one update: a few launches on the GPU instead of one per span.
void AdamWStepCore::update_on_device(const ops::AdamWConfig& adam) {
  std::vector<ops::AdamWParam> params;
  for (const OwnedSpan& s : spans_) {
    auto part = [&](const Tensor& t) { return t.narrow(0, s.offset, s.numel); };
    const double decay = update_weight_decay(part(grads_), part(master_), s.decays ? config_.weight_decay : 0.0,
                                             config_, adam.grad_scale);
    const Tensor working = s.writes.defined() ? s.writes.data().view({s.numel}) : Tensor();
    params.push_back({part(master_), part(exp_avg_), part(exp_avg_sq_), part(grads_), working, decay});
  }
  ops::adamw_step_multi(params, adam);
}

Tensor AdamWStepCore::working_from_masters(std::int64_t offset, std::int64_t numel, DType dtype) const {
  Tensor working = Tensor::empty({numel}, dtype, grads_.device());
  working.copy_from(master_.narrow(0, offset, numel));
  return working;
}

}  // namespace zt::train
