#include "train/zero/zero_optimizer.h"

#include <cmath>
#include <utility>

#include "distributed/communicators/collective_label.h"
#include "ops/elementwise/accumulate.h"
#include "ops/optim/adamw.h"
#include "ops/optim/l2norm.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::train {
namespace {

Tensor zeros_f32(std::int64_t n, Device device) { return Tensor::zeros({n}, DType::kF32, device); }

// "stage 2 reduce-scatter gradients, bucket 3": a collective's label in the --zero_trace trace.
std::string zero_label(int stage, const std::string& what, std::size_t bucket) {
  return "stage " + std::to_string(stage) + " " + what + ", bucket " + std::to_string(bucket);
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(std::vector<TrainableParameter> parameters, const OptimizerConfig& config,
                             distributed::Communicator& communicator, int stage, std::int64_t bucket_numel,
                             const OffloadOptions& offload)
    : parameters_(std::move(parameters)),
      config_(config),
      comm_(communicator),
      stage_(stage),
      rank_(comm_.rank()),
      device_(parameters_.empty() ? Device::cpu() : parameters_[0].variable.data().device()) {
  ZT_REQUIRE(stage >= 0 && stage <= 2, "ZeRO stage " + std::to_string(stage) + " is not one this optimizer runs (0-2)");
  ZT_REQUIRE(!parameters_.empty(), "ZeRO: nothing to train");
  ZT_REQUIRE(!offload.enabled || stage >= 1, "rank " + std::to_string(rank_) +
                                                 ": optimizer offload needs ZeRO stage 1 or 2 (stage is 0)");
  std::vector<std::int64_t> numels;
  for (const TrainableParameter& p : parameters_) numels.push_back(p.variable.data().numel());
  // Stage 0 replicates the optimizer: one "owner" holding everything, on every rank.
  if (stage_ == 0) rank_ = 0;
  layout_ = make_zero_layout(numels, stage_ == 0 ? 1 : comm_.world_size(), bucket_numel);
  bucket_of_.resize(parameters_.size());
  slot_of_.resize(parameters_.size());
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    for (std::size_t k = 0; k < layout_.buckets[b].parameters.size(); ++k) {
      bucket_of_[layout_.buckets[b].parameters[k]] = b;
      slot_of_[layout_.buckets[b].parameters[k]] = k;
    }
    staging_.push_back(stage_ == 1 ? Tensor() : zeros_f32(layout_.buckets[b].padded_numel, device_));
  }
  ready_.assign(layout_.buckets.size(), 0);
  // With offload the initial master is built on the host and handed over.
  master_ = zeros_f32(layout_.partition_numel, offload.enabled ? Device::cpu() : device_);
  grads_ = zeros_f32(layout_.partition_numel, device_);
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    for (const OwnedPiece& piece : layout_.owned_pieces(b, rank_))
      owned(master_, b).narrow(0, piece.chunk_offset, piece.numel)
          .copy_from(flat_parameter(piece.parameter).narrow(0, piece.parameter_offset, piece.numel));
  if (offload.enabled) {
    offload_state(offload);
  } else {
    exp_avg_ = zeros_f32(layout_.partition_numel, device_);
    exp_avg_sq_ = zeros_f32(layout_.partition_numel, device_);
  }
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (stage_ == 1) full_grads_.push_back(zeros_f32(numels[i], device_));
    parameters_[i].variable.add_grad_ready_hook([this, i](const Tensor& grad) {
      Tensor contribution = grad;
      on_gradient(i, contribution);
      parameters_[i].variable.zero_grad();
    });
  }
}

void ZeroOptimizer::offload_state(const OffloadOptions& options) {
  const std::vector<OffloadSegment> segments = owned_segments(
      layout_, rank_, config_.weight_decay, [&](std::size_t parameter) { return parameters_[parameter].weight_decay; });
  offload_ = std::make_unique<OptimizerOffload>(master_, segments, offload_working_dtype(parameters_), device_,
                                                config_, options);
  master_ = offload_->master();
  exp_avg_ = offload_->exp_avg();
  exp_avg_sq_ = offload_->exp_avg_sq();
}

Tensor ZeroOptimizer::owned(const Tensor& partition, std::size_t bucket) const {
  return partition.narrow(0, layout_.partition_offset(bucket), layout_.buckets[bucket].chunk());
}

Tensor ZeroOptimizer::flat_parameter(std::size_t parameter) const {
  return parameters_[parameter].variable.data().view({parameters_[parameter].variable.data().numel()});
}

void ZeroOptimizer::on_gradient(std::size_t parameter, const Tensor& grad) {
  if (stage_ == 1) return ops::accumulate_(full_grads_[parameter], grad.reshape({grad.numel()}));
  const std::size_t b = bucket_of_[parameter];
  const ZeroBucket& bucket = layout_.buckets[b];
  const std::size_t k = slot_of_[parameter];
  ops::accumulate_(staging_[b].narrow(0, bucket.offsets[k], bucket.numels[k]), grad.reshape({bucket.numels[k]}));
  if (++ready_[b] == bucket.parameters.size()) reduce_bucket(b);
}

// Stage 0: all-reduce the bucket and keep all of it; stage 2: reduce-scatter it and keep
// this rank's chunk. Either way the staging buffer is cleared for the next backward.
void ZeroOptimizer::reduce_bucket(std::size_t b) {
  Tensor& staging = staging_[b];
  if (stage_ == 0) {
    distributed::CollectiveLabel label([&] { return zero_label(stage_, "all-reduce gradients", b); });
    comm_.all_reduce(staging, distributed::ReduceOp::kSum);
    ops::accumulate_(owned(grads_, b), staging);
  } else {
    Tensor chunk = zeros_f32(layout_.buckets[b].chunk(), staging.device());
    distributed::CollectiveLabel label([&] { return zero_label(stage_, "reduce-scatter gradients", b); });
    comm_.reduce_scatter(staging, chunk);
    ops::accumulate_(owned(grads_, b), chunk);
  }
  staging.zero_();
  ready_[b] = 0;
}

// Stage 1 at the accumulation boundary: each bucket's full gradients reduce-scattered.
void ZeroOptimizer::reduce_accumulated_gradients() {
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    const ZeroBucket& bucket = layout_.buckets[b];
    Tensor packed = zeros_f32(bucket.padded_numel, device_);
    for (std::size_t k = 0; k < bucket.parameters.size(); ++k)
      packed.narrow(0, bucket.offsets[k], bucket.numels[k]).copy_from(full_grads_[bucket.parameters[k]]);
    distributed::CollectiveLabel label([&] { return zero_label(stage_, "reduce-scatter accumulated gradients", b); });
    comm_.reduce_scatter(packed, owned(grads_, b));
  }
}

double ZeroOptimizer::global_grad_norm() const {
  const double local = ops::l2_norm({grads_}).to(Device::cpu()).to_vector().at(0);
  if (stage_ == 0) return local;  // every rank holds every gradient
  Tensor squares = Tensor::full({1}, local * local, DType::kF64).to(grads_.device());
  if (squares.device().is_cuda()) squares = squares.to(DType::kF32);
  distributed::CollectiveLabel label([&] { return "stage " + std::to_string(stage_) + " all-reduce gradient norm"; });
  comm_.all_reduce(squares, distributed::ReduceOp::kSum);
  return std::sqrt(squares.to(Device::cpu()).to_vector().at(0));
}

Tensor ZeroOptimizer::working_chunk(std::size_t b) const {
  const ZeroBucket& bucket = layout_.buckets[b];
  Tensor chunk = Tensor::empty({bucket.chunk()}, parameters_[bucket.parameters[0]].variable.data().dtype(), device_);
  chunk.copy_from(owned(master_, b));
  return chunk;
}

void ZeroOptimizer::gather_working_weights(std::size_t b, const Tensor& chunk) {
  const ZeroBucket& bucket = layout_.buckets[b];
  Tensor full = chunk;
  if (layout_.world_size > 1) {
    full = Tensor::empty({bucket.padded_numel}, chunk.dtype(), device_);
    distributed::CollectiveLabel label([&] { return zero_label(stage_, "all-gather updated weights", b); });
    comm_.all_gather(chunk, full);
  }
  for (std::size_t k = 0; k < bucket.parameters.size(); ++k)
    flat_parameter(bucket.parameters[k]).copy_from(full.narrow(0, bucket.offsets[k], bucket.numels[k]));
}

StepResult ZeroOptimizer::step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) {
  if (stage_ == 1) reduce_accumulated_gradients();
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    if (ready_[b] > 0) reduce_bucket(b);  // a bucket with a parameter that got no gradient
  StepResult result;
  result.grad_norm = global_grad_norm() / loss_scale;
  if (!std::isfinite(result.grad_norm)) {
    result.skipped = true;
    return result;
  }
  double divisor = loss_scale;
  if (max_grad_norm > 0.0) divisor *= std::max(1.0, (result.grad_norm + 1e-6) / max_grad_norm);
  const ops::AdamWConfig adam{.lr = lr, .beta1 = config_.beta1, .beta2 = config_.beta2, .eps = config_.eps,
                              .step = step, .grad_scale = divisor};
  if (offload_) {
    step_offloaded(adam);
    return result;
  }
  std::vector<ops::AdamWParam> pieces;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    for (const OwnedPiece& piece : layout_.owned_pieces(b, rank_)) {
      auto part = [&](const Tensor& t) { return owned(t, b).narrow(0, piece.chunk_offset, piece.numel); };
      double decay = parameters_[piece.parameter].weight_decay ? config_.weight_decay : 0.0;
      if (!config_.decoupled_weight_decay && decay != 0.0) {
        ops::accumulate_(part(grads_), part(master_), decay * divisor);
        decay = 0.0;
      }
      pieces.push_back({part(master_), part(exp_avg_), part(exp_avg_sq_), part(grads_), Tensor(), decay});
    }
  }
  // Every owned piece in one update (a few launches on the GPU), then the working weights.
  ops::adamw_step_multi(pieces, adam);
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) gather_working_weights(b, working_chunk(b));
  return result;
}

void ZeroOptimizer::step_offloaded(const ops::AdamWConfig& adam) {
  const Tensor working = offload_->step(grads_, adam);
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) gather_working_weights(b, owned(working, b));
  if (comm_.rank() == 0) offload_->log_report_once();
}

void ZeroOptimizer::zero_grad() {
  grads_.zero_();
  for (Tensor& grad : full_grads_) grad.zero_();
}

std::int64_t ZeroOptimizer::state_numel() const {
  std::int64_t n = 4 * layout_.partition_numel;
  for (const Tensor& grad : full_grads_) n += grad.numel();
  return n;
}

std::map<std::string, Tensor> ZeroOptimizer::state_dict() const {
  std::map<std::string, Tensor> state;
  for (const TrainableParameter& p : parameters_)
    for (const char* suffix : {".master", ".exp_avg", ".exp_avg_sq"})
      state[p.name + suffix] = Tensor::zeros({p.variable.data().numel()}, DType::kF32, master_.device());
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    const ZeroBucket& bucket = layout_.buckets[b];
    for (auto [suffix, partition] : {std::pair{".master", &master_}, std::pair{".exp_avg", &exp_avg_},
                                     std::pair{".exp_avg_sq", &exp_avg_sq_}}) {
      Tensor chunk = owned(*partition, b).to(device_);  // the collective runs where the gradients are
      Tensor full = chunk;
      if (layout_.world_size > 1) {
        full = Tensor::empty({bucket.padded_numel}, DType::kF32, device_);
        distributed::CollectiveLabel label(
            [&] { return zero_label(stage_, "all-gather optimizer state " + std::string(suffix), b); });
        comm_.all_gather(chunk, full);
      }
      for (std::size_t k = 0; k < bucket.parameters.size(); ++k)
        state[parameters_[bucket.parameters[k]].name + suffix].copy_from(full.narrow(0, bucket.offsets[k], bucket.numels[k]));
    }
  }
  for (const TrainableParameter& p : parameters_)
    for (const char* suffix : {".master", ".exp_avg", ".exp_avg_sq"})
      state[p.name + suffix] = state[p.name + suffix].view(p.variable.data().shape());
  return state;
}

std::vector<StateSlice> ZeroOptimizer::held_state() const {
  std::vector<StateSlice> slices;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    for (const OwnedPiece& piece : layout_.owned_pieces(b, rank_)) {
      auto part = [&](const Tensor& t) { return owned(t, b).narrow(0, piece.chunk_offset, piece.numel); };
      const TrainableParameter& p = parameters_[piece.parameter];
      slices.push_back({p.name, p.variable.data().shape(), piece.parameter_offset, piece.parameter_offset + piece.numel,
                        part(master_), part(exp_avg_), part(exp_avg_sq_)});
    }
  return slices;
}

void ZeroOptimizer::refresh_working_weights() {
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) gather_working_weights(b, working_chunk(b));
}

}  // namespace zt::train
