#include "train/optim/adamw_step_core.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "distributed/communicators/collective_label.h"
#include "ops/elementwise/accumulate.h"
#include "ops/optim/adamw.h"
#include "ops/optim/host_chunks.h"
#include "ops/optim/l2norm.h"
#include "runtime/error.h"
#include "runtime/profile/step_profiler.h"

namespace zt::train {
namespace {

double l2_norm_of(const std::vector<Tensor>& tensors) {
  return ops::l2_norm(tensors).to(Device::cpu()).to_vector().at(0);
}

}  // namespace

GradientNorm local_gradient_norm(const std::vector<Tensor>& grads) {
  ProfileRegion region(OpFamily::kGradNorm);
  const double norm = l2_norm_of(grads);
  return {.scaled = norm, .overflow = !std::isfinite(norm)};
}

GradientNorm agreed_gradient_norm(distributed::Communicator& comm, const Tensor& grads, Device device,
                                  const std::string& label, DType gpu_dtype) {
  ProfileRegion region(OpFamily::kGradNorm);
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

bool update_weight_decay_couples(double decay, const OptimizerConfig& config) {
  return !config.decoupled_weight_decay && decay != 0.0;
}

double update_weight_decay(const Tensor& grad, const Tensor& master, double decay, const OptimizerConfig& config,
                           double grad_scale) {
  if (!update_weight_decay_couples(decay, config)) return decay;
  ops::accumulate_(grad, master, decay * grad_scale);
  return 0.0;
}

namespace {

// Where the offloaded share begins: the span start (or the partition's ends) that leaves the
// host the nearest to `ratio` of the partition, whole spans on each side (a parameter's piece
// is never split between the GPU and the host). Ratio 1 offloads everything, 0 nothing.
std::int64_t offload_boundary(const std::vector<OwnedSpan>& spans, std::int64_t numel, double ratio) {
  std::vector<std::int64_t> candidates{0, numel};
  for (const OwnedSpan& s : spans) candidates.push_back(s.offset);
  const double wanted = ratio * static_cast<double>(numel);
  std::int64_t best = numel;
  for (std::int64_t c : candidates) {
    const double miss = std::abs(static_cast<double>(numel - c) - wanted);
    const double best_miss = std::abs(static_cast<double>(numel - best) - wanted);
    if (miss < best_miss || (miss == best_miss && c < best)) best = c;
  }
  return best;
}

}  // namespace

AdamWStepCore::AdamWStepCore(const OptimizerConfig& config, OwnedPartition owned, Device device,
                             const OffloadOptions& offload, const std::vector<TrainableParameter>& trainable)
    : config_(config), spans_(std::move(owned.spans)), numel_(owned.numel), device_(device) {
  ZT_REQUIRE(offload.ratio >= 0.0 && offload.ratio <= 1.0,
             "optimizer offload: ratio must be in [0, 1], got " + std::to_string(offload.ratio));
  split_ = offload.enabled ? offload_boundary(spans_, numel_, offload.ratio) : numel_;
  ZT_REQUIRE(!offload.gradients_on_host || split_ == 0,
             "optimizer offload: a partial offload (ratio below 1) keeps the gradients on the device");
  ZT_REQUIRE(!offload.delayed_update || (offload.enabled && split_ == 0 && !offload.gradients_on_host),
             "optimizer offload: the delayed update needs the whole partition offloaded (ratio 1) and the gradients "
             "kept on the device");
  ZT_REQUIRE(!offload.enabled || owned.gradient_dtype == DType::kF32,
             "optimizer offload: the gradients the CPU Adam reads are fp32");
  delayed_ = offload.delayed_update;
  // With offload the initial master is built in host memory and handed over.
  Tensor master = Tensor::zeros({numel_}, DType::kF32, split_ < numel_ ? Device::cpu() : device);
  for (std::size_t i = 0; i < spans_.size(); ++i)
    master.narrow(0, spans_[i].offset, spans_[i].numel).copy_from(owned.initial[i]);
  master_ = split_ == numel_ ? master : master.narrow(0, 0, split_).to(device);
  exp_avg_ = Tensor::zeros({split_}, DType::kF32, device);
  exp_avg_sq_ = Tensor::zeros({split_}, DType::kF32, device);
  ZT_REQUIRE(!owned.segmented_gradients || !offload.enabled,
             "optimizer: gradients held per step in segments are not for optimizer offload, which reads them flat");
  if (owned.segmented_gradients) {
    std::vector<GradientSpan> spans;
    for (const OwnedSpan& s : spans_) spans.push_back({s.name, s.offset, s.numel});
    segments_ = std::make_unique<GradientSegments>(spans, numel_, owned.gradient_dtype, device);
    return;
  }
  if (split_ == numel_) {
    grads_ = Tensor::zeros({numel_}, owned.gradient_dtype, device);
    return;
  }
  std::vector<OffloadSegment> segments;
  for (const OwnedSpan& s : spans_)
    if (s.offset >= split_) segments.push_back({s.offset - split_, s.numel, s.decays ? config_.weight_decay : 0.0});
  offload_ = std::make_unique<OptimizerOffload>(master.narrow(0, split_, numel_ - split_), std::move(segments),
                                                offload_working_dtype(trainable), device, config_, offload);
  grads_ = offload.gradients_on_host ? offload_->host_grads() : Tensor::zeros({numel_}, DType::kF32, device);
}

const Tensor& AdamWStepCore::grads() const {
  ZT_REQUIRE(!segments_, "optimizer: the gradients are held in segments, not one flat buffer; read them by span");
  return grads_;
}

Tensor AdamWStepCore::span_gradient(std::size_t i) {
  if (segments_) return segments_->span(i);
  return grads_.narrow(0, spans_.at(i).offset, spans_.at(i).numel);
}

std::vector<Tensor> AdamWStepCore::span_gradients() {
  std::vector<Tensor> gradients;
  for (std::size_t i = 0; i < spans_.size(); ++i) gradients.push_back(span_gradient(i));
  return gradients;
}

Tensor AdamWStepCore::state_range(StatePart part, std::int64_t offset, std::int64_t numel) const {
  auto device_share = [&]() -> const Tensor& {
    return part == StatePart::kMaster ? master_ : part == StatePart::kExpAvg ? exp_avg_ : exp_avg_sq_;
  };
  auto host_share = [&]() -> const Tensor& {
    return part == StatePart::kMaster   ? offload_->master()
           : part == StatePart::kExpAvg ? offload_->exp_avg()
                                        : offload_->exp_avg_sq();
  };
  if (offset + numel <= split_) return device_share().narrow(0, offset, numel);
  if (offset >= split_) return host_share().narrow(0, offset - split_, numel);
  // Across the boundary: the two pieces side by side on the device.
  Tensor whole = Tensor::empty({numel}, DType::kF32, device_);
  whole.narrow(0, 0, split_ - offset).copy_from(device_share().narrow(0, offset, split_ - offset));
  whole.narrow(0, split_ - offset, offset + numel - split_)
      .copy_from(host_share().narrow(0, 0, offset + numel - split_));
  return whole;
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
  for (const OwnedSpan& s : spans_)
    slices.push_back({s.name, s.shape, s.parameter_offset, s.parameter_offset + s.numel,
                      state_range(StatePart::kMaster, s.offset, s.numel),
                      state_range(StatePart::kExpAvg, s.offset, s.numel),
                      state_range(StatePart::kExpAvgSq, s.offset, s.numel)});
  return slices;
}

StepResult AdamWStepCore::step(const StepRequest& request, const GradientNorm& norm,
                               const std::function<void(const Tensor& offloaded)>& write_working) {
  const StepResult result{.skipped = norm.overflow, .grad_norm = norm.scaled / request.loss_scale};
  if (result.skipped) return result;
  const ops::AdamWConfig adam{.lr = request.lr,
                              .hyperparameters = config_,
                              .step = request.step,
                              .grad_scale = clip_divisor(result.grad_norm, request.loss_scale, request.max_grad_norm),
                              // The norm is finite (else the step was skipped above): so is every gradient.
                              .gradients_known_finite = true};
  if (!offload_) {
    update_on_device(adam);
    write_working(Tensor());
    return result;
  }
  if (delayed_) {
    // The last step's update lands (the weights the next forward reads), this one starts.
    settle(write_working);
    offload_->start(grads_, adam);
  } else if (split_ == 0) {
    write_working(offload_->step(grads_, adam));
  } else {
    // Partial offload: the device's share is updated on the device while the CPU Adam updates
    // the host's; the new weights of both meet in one working-dtype partition on the device.
    Tensor working = Tensor::empty({numel_}, offload_->working_dtype(), device_);
    offload_->step(grads_.narrow(0, split_, numel_ - split_), working.narrow(0, split_, numel_ - split_), adam, [&] {
      update_on_device(adam);
      working.narrow(0, 0, split_).copy_from(master_);
    });
    write_working(working);
  }
  offload_->log_report_once();
  return result;
}

bool AdamWStepCore::settle(const std::function<void(const Tensor& offloaded)>& write_working) {
  if (!offload_ || !offload_->pending()) return false;
  Tensor working = Tensor::empty({numel_}, offload_->working_dtype(), device_);
  offload_->land(working);
  write_working(working);
  return true;
}

// Host gradients (optimizer offload's block, or a CPU run's) are zeroed on every core. A
// started update's copies of them must have left first.
void AdamWStepCore::zero_grad() {
  ProfileRegion region(OpFamily::kGradAccumulate);
  if (offload_ && offload_->pending()) offload_->before_gradients_change();
  if (segments_)
    segments_->release();
  else if (grads_.device().is_cpu())
    ops::zero_host_tensor(grads_);
  else
    grads_.zero_();
}

// Every span of the device's share in one update: a few launches on the GPU instead of one
// per span.
void AdamWStepCore::update_on_device(const ops::AdamWConfig& adam) {
  std::vector<ops::AdamWParam> params;
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    const OwnedSpan& s = spans_[i];
    if (s.offset >= split_) continue;
    auto part = [&](const Tensor& t) { return t.narrow(0, s.offset, s.numel); };
    const double span_decay = s.decays ? config_.weight_decay : 0.0;
    Tensor grad = span_gradient(i);
    // L2 decay is added to a 16-bit gradient's fp32 copy, unrounded (DeepSpeed's Adam adds
    // it in fp32 inside the update); the copy lives until the update is done.
    if (grad.dtype() != DType::kF32 && update_weight_decay_couples(span_decay, config_)) grad = grad.to(DType::kF32);
    const double decay = update_weight_decay(grad, part(master_), span_decay, config_, adam.grad_scale);
    const Tensor working = s.writes.defined() ? s.writes.data().view({s.numel}) : Tensor();
    params.push_back({part(master_), part(exp_avg_), part(exp_avg_sq_), grad, working, decay});
  }
  if (!params.empty()) ops::adamw_step_multi(params, adam);
}

Tensor AdamWStepCore::working_from_masters(std::int64_t offset, std::int64_t numel, DType dtype) const {
  Tensor working = Tensor::empty({numel}, dtype, segments_ ? device_ : grads_.device());
  working.copy_from(state_range(StatePart::kMaster, offset, numel));
  return working;
}

}  // namespace zt::train
