#include "train/zero/zero3_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "distributed/communicators/collective_label.h"
#include "ops/elementwise/accumulate.h"
#include "ops/optim/adamw.h"
#include "ops/optim/l2norm.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::train {
namespace {

Tensor zeros_f32(std::int64_t n, Device device) { return Tensor::zeros({n}, DType::kF32, device); }
Tensor flat(const Tensor& t) { return t.view({t.numel()}); }

// "stage 3 reduce-scatter gradients, bucket 3": a collective's label in the --zero_trace trace.
std::string bucket_label(const std::string& what, std::size_t bucket) {
  return "stage 3 " + what + ", bucket " + std::to_string(bucket);
}

// How far ahead the next modules are gathered, in words.
std::string prefetch_summary(const ZeroConfig& zero, std::int64_t largest_module) {
  if (zero.stage3_prefetch_bucket_size <= 0) return "off (stage3_prefetch_bucket_size is 0)";
  std::string line = "the next module, and more while up to " + std::to_string(zero.stage3_prefetch_bucket_size) +
                     " elements are gathered ahead of use (stage3_prefetch_bucket_size); at most " +
                     std::to_string(zero.stage3_max_live_parameters) + " whole at once (stage3_max_live_parameters)";
  if (zero.stage3_max_live_parameters < 2 * largest_module)
    line += ", which leaves too little room to prefetch while the largest module is in use";
  return line;
}

}  // namespace

Zero3Optimizer::Zero3Optimizer(models::CausalLM& model, const std::vector<TrainableParameter>& trainable,
                               const OptimizerConfig& config, distributed::Communicator& communicator,
                               const ZeroConfig& zero, const OffloadOptions& offload)
    : partitioner_(std::make_unique<Zero3Partitioner>(
          model, trainable, communicator, zero.stage3_param_persistence_threshold,
          PrefetchLimits{.bucket_numel = zero.stage3_prefetch_bucket_size,
                         .max_live_numel = zero.stage3_max_live_parameters})),
      config_(config),
      comm_(communicator),
      rank_(communicator.rank()),
      device_(model.device()) {
  ZT_REQUIRE(!trainable.empty(), "ZeRO-3: nothing to train");
  ZT_REQUIRE(zero.reduce_bucket_size > 0, "ZeRO-3: reduce_bucket_size must be > 0");
  autograd::NoGradGuard no_recording;
  const auto& params = partitioner_->parameters();
  const int world = comm_.world_size();
  // Buckets 0..: the trainable flat groups, each exactly the partitioner's layout.
  std::vector<ZeroBucket> buckets;
  for (std::size_t g = 0; g < partitioner_->groups().size(); ++g)
    if (partitioner_->groups()[g].trainable) {
      buckets.push_back(partitioner_->layout().buckets[g]);
      group_of_.push_back(g);
    }
  // Then the trainable parameters kept whole, in reduce_bucket_size buckets as stage 2 has them.
  std::vector<std::size_t> whole;
  std::vector<std::int64_t> whole_numels;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].trainable && params[i].persistent) {
      whole.push_back(i);
      whole_numels.push_back(shape_numel(params[i].shape));
    }
  if (!whole.empty())
    for (ZeroBucket bucket : make_zero_layout(whole_numels, world, zero.reduce_bucket_size).buckets) {
      for (std::size_t& index : bucket.parameters) index = whole[index];
      buckets.push_back(std::move(bucket));
      group_of_.push_back(Zero3Partitioner::kWhole);
    }
  layout_ = layout_of(std::move(buckets), world);

  bucket_of_.assign(params.size(), Zero3Partitioner::kWhole);
  slot_of_.assign(params.size(), 0);
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    for (std::size_t k = 0; k < layout_.buckets[b].parameters.size(); ++k) {
      bucket_of_[layout_.buckets[b].parameters[k]] = b;
      slot_of_[layout_.buckets[b].parameters[k]] = k;
    }
  staging_.resize(layout_.buckets.size());
  ready_.assign(layout_.buckets.size(), 0);
  // With offload the initial master is built on the host and handed over.
  master_ = zeros_f32(layout_.partition_numel, offload.enabled ? Device::cpu() : device_);
  grads_ = zeros_f32(layout_.partition_numel, device_);
  // fp32 master weights: the rank's shard of each flat group (the same elements), and its
  // pieces of the persistent parameters.
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    if (group_of_[b] != Zero3Partitioner::kWhole) {
      owned(master_, b).copy_from(partitioner_->shard(group_of_[b]));
      continue;
    }
    for (const OwnedPiece& piece : layout_.owned_pieces(b, rank_))
      owned(master_, b).narrow(0, piece.chunk_offset, piece.numel)
          .copy_from(flat(parameter(piece.parameter).variable.data()).narrow(0, piece.parameter_offset, piece.numel));
  }
  if (offload.enabled) {
    offload_state(trainable, offload);
  } else {
    exp_avg_ = zeros_f32(layout_.partition_numel, device_);
    exp_avg_sq_ = zeros_f32(layout_.partition_numel, device_);
  }
  if (rank_ == 0) {
    std::size_t kept_whole = 0;
    for (const auto& p : params) kept_whole += p.persistent;
    ZT_LOG(kInfo, "ZeRO-3: " << params.size() << " parameters over " << world << " ranks: "
                             << params.size() - kept_whole << " partitioned in " << partitioner_->groups().size()
                             << " flat groups, " << kept_whole << " of at most "
                             << zero.stage3_param_persistence_threshold
                             << " elements kept whole; the largest module is "
                             << partitioner_->largest_module_numel()
                             << " elements when gathered. Each layer is recomputed in backward. Prefetch: "
                             << prefetch_summary(zero, partitioner_->largest_module_numel())
                             << " (stage3_max_reuse_distance does not apply: a module is released after each use)");
  }
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].trainable)
      params[i].variable.add_grad_ready_hook([this, i](const Tensor& grad) {
        Tensor contribution = grad;  // the hook's argument is the leaf's slot, cleared next
        on_gradient(i, contribution);
        parameter(i).variable.zero_grad();
      });
}

// Master and moments move into the offload's host block; `trainable` gives the working dtype.
void Zero3Optimizer::offload_state(const std::vector<TrainableParameter>& trainable, const OffloadOptions& options) {
  const std::vector<OffloadSegment> segments = owned_segments(
      layout_, rank_, config_.weight_decay, [&](std::size_t i) { return parameter(i).weight_decay; });
  offload_ = std::make_unique<OptimizerOffload>(master_, segments, offload_working_dtype(trainable), device_, config_,
                                                options);
  master_ = offload_->master();
  exp_avg_ = offload_->exp_avg();
  exp_avg_sq_ = offload_->exp_avg_sq();
}

Tensor Zero3Optimizer::owned(const Tensor& partition, std::size_t bucket) const {
  return partition.narrow(0, layout_.partition_offset(bucket), layout_.buckets[bucket].chunk());
}

// A gradient into its bucket's fp32 staging buffer (allocated for this backward only);
// the bucket is reduce-scattered once all its parameters have theirs.
void Zero3Optimizer::on_gradient(std::size_t i, const Tensor& grad) {
  const std::size_t b = bucket_of_[i];
  const ZeroBucket& bucket = layout_.buckets[b];
  const std::size_t k = slot_of_[i];
  if (!staging_[b].defined()) staging_[b] = zeros_f32(bucket.padded_numel, device_);
  ops::accumulate_(staging_[b].narrow(0, bucket.offsets[k], bucket.numels[k]), grad.reshape({bucket.numels[k]}));
  if (++ready_[b] == bucket.parameters.size()) reduce_bucket(b);
}

// The reduce-scatter: rank r receives the sum over ranks of chunk r of the bucket, adds it to
// the gradient it owns (accumulating over micro-batches), and the staging buffer is freed.
void Zero3Optimizer::reduce_bucket(std::size_t b) {
  Tensor chunk = zeros_f32(layout_.buckets[b].chunk(), device_);
  distributed::CollectiveLabel label([&] { return bucket_label("reduce-scatter gradients", b); });
  comm_.reduce_scatter(staging_[b], chunk);
  ops::accumulate_(owned(grads_, b), chunk);
  staging_[b] = Tensor();
  ready_[b] = 0;
}

Tensor Zero3Optimizer::working_chunk(std::size_t b) const {
  const ZeroBucket& bucket = layout_.buckets[b];
  const DType working = group_of_[b] != Zero3Partitioner::kWhole ? partitioner_->shard(group_of_[b]).dtype()
                                                                 : parameter(bucket.parameters[0]).variable.data().dtype();
  Tensor chunk = Tensor::empty({bucket.chunk()}, working, device_);
  chunk.copy_from(owned(master_, b));
  return chunk;
}

// After the update, `chunk` is this rank's new chunk of bucket b in the working dtype, on the
// device. A flat group's shard takes it in place (no communication); a persistent bucket is
// all-gathered into the whole parameters every rank keeps.
void Zero3Optimizer::write_working_weights(std::size_t b, const Tensor& chunk) {
  if (group_of_[b] != Zero3Partitioner::kWhole) {
    Tensor shard = partitioner_->shard(group_of_[b]);  // a handle: the copy writes the shard
    shard.copy_from(chunk);
    return;
  }
  const ZeroBucket& bucket = layout_.buckets[b];
  Tensor full = Tensor::empty({bucket.padded_numel}, chunk.dtype(), device_);
  distributed::CollectiveLabel label([&] { return bucket_label("all-gather persistent weights", b); });
  comm_.all_gather(chunk.contiguous(), full);
  for (std::size_t k = 0; k < bucket.parameters.size(); ++k)
    flat(parameter(bucket.parameters[k]).variable.data()).copy_from(full.narrow(0, bucket.offsets[k], bucket.numels[k]));
}

StepResult Zero3Optimizer::step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) {
  autograd::NoGradGuard no_recording;
  partitioner_->drop_prefetches();  // a gather still reading a shard must finish before it is rewritten
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    if (ready_[b] > 0) reduce_bucket(b);  // a bucket with a parameter that got no gradient
  // The global norm and the overflow verdict, agreed in one all-reduce: [Σ squares, overflowed].
  const double local_norm = ops::l2_norm({grads_}).to(Device::cpu()).to_vector().at(0);
  const bool local_overflow = !std::isfinite(local_norm);
  Tensor agreed = Tensor::from_values({local_overflow ? 0.0 : local_norm * local_norm, local_overflow ? 1.0 : 0.0},
                                      {2}, DType::kF64).to(device_);
  distributed::CollectiveLabel label([] { return "stage 3 all-reduce gradient norm and overflow"; });
  comm_.all_reduce(agreed, distributed::ReduceOp::kSum);
  const std::vector<double> totals = agreed.to(Device::cpu()).to_vector();
  StepResult result;
  if (totals[1] > 0.0) {  // some rank overflowed: every rank skips this step
    result.skipped = true;
    result.grad_norm = std::numeric_limits<double>::infinity();
    return result;
  }
  result.grad_norm = std::sqrt(totals[0]) / loss_scale;
  double divisor = loss_scale;
  if (max_grad_norm > 0.0) divisor *= std::max(1.0, (result.grad_norm + 1e-6) / max_grad_norm);
  const ops::AdamWConfig adam{.lr = lr, .beta1 = config_.beta1, .beta2 = config_.beta2, .eps = config_.eps,
                              .step = step, .grad_scale = divisor};
  if (offload_) {
    const Tensor working = offload_->step(grads_, adam);
    for (std::size_t b = 0; b < layout_.buckets.size(); ++b) write_working_weights(b, owned(working, b));
    if (rank_ == 0) offload_->log_report_once();
    return result;
  }
  std::vector<ops::AdamWParam> pieces;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    for (const OwnedPiece& piece : layout_.owned_pieces(b, rank_)) {
      auto part = [&](const Tensor& t) { return owned(t, b).narrow(0, piece.chunk_offset, piece.numel); };
      double decay = parameter(piece.parameter).weight_decay ? config_.weight_decay : 0.0;
      if (!config_.decoupled_weight_decay && decay != 0.0) {
        ops::accumulate_(part(grads_), part(master_), decay * divisor);
        decay = 0.0;
      }
      pieces.push_back({part(master_), part(exp_avg_), part(exp_avg_sq_), part(grads_), Tensor(), decay});
    }
  }
  ops::adamw_step_multi(pieces, adam);
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) write_working_weights(b, working_chunk(b));
  return result;
}

void Zero3Optimizer::zero_grad() { grads_.zero_(); }

std::map<std::string, Tensor> Zero3Optimizer::state_dict() const {
  std::map<std::string, Tensor> state;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    const ZeroBucket& bucket = layout_.buckets[b];
    for (auto [suffix, partition] : {std::pair{".master", &master_}, std::pair{".exp_avg", &exp_avg_},
                                     std::pair{".exp_avg_sq", &exp_avg_sq_}}) {
      // One bucket whole on the device at a time; each parameter's part goes to host memory.
      Tensor full = Tensor::empty({bucket.padded_numel}, DType::kF32, device_);
      distributed::CollectiveLabel label(
          [&] { return bucket_label("all-gather optimizer state " + std::string(suffix), b); });
      comm_.all_gather(owned(*partition, b).to(device_).contiguous(), full);  // host chunks with offload
      for (std::size_t k = 0; k < bucket.parameters.size(); ++k) {
        const Zero3Partitioner::Parameter& p = parameter(bucket.parameters[k]);
        Tensor host = Tensor::empty(p.shape, DType::kF32, Device::cpu());
        flat(host).copy_from(full.narrow(0, bucket.offsets[k], bucket.numels[k]));
        state[p.name + suffix] = host;
      }
    }
  }
  return state;
}

std::vector<StateSlice> Zero3Optimizer::held_state() const {
  std::vector<StateSlice> slices;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    for (const OwnedPiece& piece : layout_.owned_pieces(b, rank_)) {
      auto part = [&](const Tensor& t) { return owned(t, b).narrow(0, piece.chunk_offset, piece.numel); };
      const Zero3Partitioner::Parameter& p = parameter(piece.parameter);
      slices.push_back({p.name, p.shape, piece.parameter_offset, piece.parameter_offset + piece.numel, part(master_),
                        part(exp_avg_), part(exp_avg_sq_)});
    }
  return slices;
}

void Zero3Optimizer::refresh_working_weights() {
  autograd::NoGradGuard no_recording;
  partitioner_->drop_prefetches();
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) write_working_weights(b, working_chunk(b));
}

}  // namespace zt::train
