#include "train/zero/zero3_optimizer.h"

#include <utility>

#include "autograd/grad_mode.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::train {
namespace {

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
    : ZeroEngine(communicator, 3, model.device(), model.dtype(),
                 {.dtype = zero.communication_data_type, .overlap = zero.overlap_comm}),
      partitioner_(std::make_unique<Zero3Partitioner>(
          model, trainable, communicator, zero.stage3_param_persistence_threshold,
          PrefetchLimits{.bucket_numel = zero.stage3_prefetch_bucket_size,
                         .max_live_numel = zero.stage3_max_live_parameters},
          ParameterOffloadOptions{.enabled = zero.offload_param, .pin_memory = zero.offload_param_pin_memory})) {
  ZT_REQUIRE(!trainable.empty(), "ZeRO-3: nothing to train");
  ZT_REQUIRE(zero.reduce_bucket_size > 0, "ZeRO-3: reduce_bucket_size must be > 0");
  autograd::NoGradGuard no_recording;
  std::vector<Parameter> described;
  for (const Zero3Partitioner::Parameter& p : partitioner_->parameters())
    described.push_back({p.name, p.variable, p.shape, p.weight_decay});
  hold_state(bucket_layout(zero.reduce_bucket_size), std::move(described), config, trainable, offload);
  if (rank_ == 0) log_summary(zero);
}

// Buckets 0..: the trainable flat groups, each exactly the partitioner's layout (so a rank's
// optimizer chunk and its parameter shard are the same elements). Then the trainable
// parameters kept whole, in reduce_bucket_size buckets as stage 2 has them.
ZeroLayout Zero3Optimizer::bucket_layout(std::int64_t reduce_bucket_size) {
  const auto& params = partitioner_->parameters();
  std::vector<ZeroBucket> buckets;
  for (std::size_t g = 0; g < partitioner_->groups().size(); ++g)
    if (partitioner_->groups()[g].trainable) {
      buckets.push_back(partitioner_->layout().buckets[g]);
      group_of_.push_back(g);
    }
  std::vector<std::size_t> whole;
  std::vector<std::int64_t> whole_numels;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].trainable && params[i].persistent) {
      whole.push_back(i);
      whole_numels.push_back(shape_numel(params[i].shape));
    }
  if (!whole.empty())
    for (ZeroBucket bucket : make_zero_layout(whole_numels, comm_.world_size(), reduce_bucket_size).buckets) {
      for (std::size_t& index : bucket.parameters) index = whole[index];
      buckets.push_back(std::move(bucket));
      group_of_.push_back(Zero3Partitioner::kWhole);
    }
  return layout_of(std::move(buckets), comm_.world_size());
}

void Zero3Optimizer::log_summary(const ZeroConfig& zero) const {
  const auto& params = partitioner_->parameters();
  std::size_t kept_whole = 0;
  for (const auto& p : params) kept_whole += p.persistent;
  ZT_LOG(kInfo, "ZeRO-3: " << params.size() << " parameters over " << comm_.world_size()
                           << " ranks: " << params.size() - kept_whole << " partitioned in "
                           << partitioner_->groups().size() << " flat groups, " << kept_whole << " of at most "
                           << zero.stage3_param_persistence_threshold << " elements kept whole; the largest module is "
                           << partitioner_->largest_module_numel()
                           << " elements when gathered. Each layer is recomputed in backward. Prefetch: "
                           << prefetch_summary(zero, partitioner_->largest_module_numel())
                           << " (stage3_max_reuse_distance does not apply: a module is released after each use)"
                           << (partitioner_->offloads_parameters()
                                   ? ". Parameter offload: the rank's shards live in host memory and each gather "
                                     "copies one to the device first"
                                   : ""));
}

Tensor Zero3Optimizer::initial_values(std::size_t b, const OwnedPiece& piece) const {
  if (group_of_[b] == Zero3Partitioner::kWhole) return ZeroEngine::initial_values(b, piece);
  return partitioner_->shard(group_of_[b]).narrow(0, piece.chunk_offset, piece.numel);
}

// `chunk` is this rank's new chunk of bucket b in the working dtype, on the device. A flat
// group's shard takes it in place (no communication); a persistent bucket is all-gathered
// into the whole parameters every rank keeps.
void Zero3Optimizer::write_working_weights(std::size_t b, const Tensor& chunk) {
  if (group_of_[b] == Zero3Partitioner::kWhole) return ZeroEngine::write_working_weights(b, chunk);
  Tensor shard = partitioner_->shard(group_of_[b]);  // a handle: the copy writes the shard
  shard.copy_from(chunk);
}

StepResult Zero3Optimizer::step(double lr, double loss_scale, double max_grad_norm, std::int64_t step) {
  autograd::NoGradGuard no_recording;
  partitioner_->drop_prefetches();  // a gather still reading a shard must finish before it is rewritten
  const StepResult result = finish_step({lr, loss_scale, max_grad_norm, step});
  log_offload_copies_once(step);
  return result;
}

void Zero3Optimizer::refresh_working_weights() {
  autograd::NoGradGuard no_recording;
  partitioner_->drop_prefetches();
  write_working_weights_from_masters();
}

// The first step's copies of offloaded shards to the device, as optimizer offload reports its
// first update (later steps copy the same).
void Zero3Optimizer::log_offload_copies_once(std::int64_t step) {
  if (!partitioner_->offloads_parameters() || rank_ != 0 || std::exchange(offload_reported_, true)) return;
  const ParameterOffloadCounters& copied = partitioner_->offload_counters();
  ZT_LOG(kInfo, "ZeRO-3 parameter offload, steps up to "
                    << step << ": " << copied.copies << " shard copies host to device, " << copied.bytes << " bytes, "
                    << copied.seconds << " s on the host ("
                    << (device_.is_cuda() ? "queueing the asynchronous copies" : "the copies themselves")
                    << "); the rank's shards hold " << partitioner_->host_shard_bytes() << " bytes of host memory");
}

HeldBuffers Zero3Optimizer::held_buffers() const {
  HeldBuffers held = ZeroEngine::held_buffers();
  std::int64_t working = partitioner_->device_shard_bytes();
  held.host_working_bytes = partitioner_->host_shard_bytes();
  for (const Zero3Partitioner::Parameter& p : partitioner_->parameters())
    if (p.persistent) working += static_cast<std::int64_t>(p.variable.data().nbytes());
  held.working_bytes = working;
  return held;
}

void Zero3Optimizer::with_whole_weights(bool only_trainable, const std::function<void()>& use) {
  partitioner_->with_whole_parameters_on_host(0, only_trainable, use);
}

void Zero3Optimizer::load_weights(bool only_trainable, const std::function<void()>& load) {
  partitioner_->load_through_host(only_trainable, load);
}

}  // namespace zt::train
