#include "train/zero/zero_engine.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "distributed/communicators/collective_label.h"
#include "ops/optim/cpu_adam.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/terminal/byte_format.h"
#include "train/zero/zero_config.h"

namespace zt::train {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

Tensor flat(const Tensor& t) { return t.view({t.numel()}); }

}  // namespace

ZeroEngine::ZeroEngine(distributed::Communicator& communicator, int stage, Device device, DType gradient_dtype,
                       GradientReduction reduction)
    : comm_(communicator),
      stage_(stage),
      rank_(stage == 0 ? 0 : communicator.rank()),
      device_(device),
      gradient_dtype_(gradient_dtype),
      reduction_(reduction) {
  if (!reduction.accumulation) return;
  const std::string conflict = grad_accum_dtype_conflict(*reduction.accumulation, gradient_dtype);
  ZT_REQUIRE(conflict.empty(), conflict);
}

// This engine's case of the rule in train/zero/zero_config.h.
DType ZeroEngine::gradient_partition_dtype(bool offload) const {
  return train::gradient_partition_dtype(stage_, comm_.world_size(), offload, reduction_.accumulation, gradient_dtype_);
}

DType ZeroEngine::whole_gradient_dtype() const {
  return train::whole_gradient_dtype(reduction_.accumulation, gradient_dtype_);
}

void ZeroEngine::hold_state(ZeroLayout layout, std::vector<Parameter> parameters, const OptimizerConfig& config,
                            const std::vector<TrainableParameter>& trainable, const OffloadOptions& offload) {
  layout_ = std::move(layout);
  parameters_ = std::move(parameters);
  place_gradients();
  OffloadOptions options = offload;
  options.log_report = comm_.rank() == 0;
  // Each reduced chunk is added in host memory (gradient_buckets.h), unless the partition is
  // summed on the device over an accumulation window and copied once at the step.
  // A partial offload (ratio below 1) keeps them on the device, where its device share reads them.
  options.gradients_on_host =
      offload.enabled && offload.ratio >= 1.0 &&
      !gradients_stay_on_device(offload.gradients, offload.accumulation, layout_.partition_numel * std::int64_t{4},
                                usable_device_bytes());
  OwnedPartition owned = owned_partition();
  owned.gradient_dtype = gradient_partition_dtype(offload.enabled);
  core_ = std::make_unique<AdamWStepCore>(config, std::move(owned), device_, options, trainable);
  if (offload.enabled && comm_.rank() == 0) log_gradient_placement(options);
  if (!offload.enabled && comm_.rank() == 0 && (stage_ == 1 || stage_ == 2) && comm_.world_size() > 1)
    log_gradient_partition();
  const std::string reduced = stage_ == 0   ? "all-reduce gradients"
                              : stage_ == 1 ? "reduce-scatter accumulated gradients"
                                            : "reduce-scatter gradients";
  buckets_ = std::make_unique<GradientBuckets>(layout_, core_->grads(), comm_, bucket_options(options),
                                               [this, reduced](std::size_t b) { return label(reduced, b); });
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (bucket_of_[i] != kNone)
      parameters_[i].variable.add_grad_ready_hook([this, i](const Tensor& grad) {
        Tensor contribution = grad;  // the hook's argument is the leaf's slot, cleared next
        on_gradient(i, contribution);
        parameters_[i].variable.zero_grad();
      });
}

// The device memory this process may use: the card's, or the allocator's cap. A CPU run's
// "device" is host memory, where the placement changes nothing: the host block is used.
std::int64_t ZeroEngine::usable_device_bytes() const {
  if (!device_.is_cuda()) return 0;
  const auto total = static_cast<std::int64_t>(device_memory_info(device_.index).total);
  const std::optional<std::size_t> cap = device_allocator(device_.index).memory_limit();
  return cap ? std::min(total, static_cast<std::int64_t>(*cap)) : total;
}

void ZeroEngine::log_gradient_placement(const OffloadOptions& options) const {
  const auto bytes = static_cast<std::size_t>(layout_.partition_numel) * sizeof(float);
  if (options.gradients_on_host)
    ZT_LOG(kInfo, "optimizer offload: the rank's fp32 gradients ("
                      << format_bytes(bytes)
                      << ") accumulate in host memory; every micro-batch's "
                         "reduced gradients are added there by the CPU");
  else
    ZT_LOG(kInfo, "optimizer offload: the rank's fp32 gradients ("
                      << format_bytes(bytes) << ") accumulate on the device over " << options.accumulation
                      << " micro-batches and go to the host once a step, beside the CPU Adam");
}

void ZeroEngine::log_gradient_partition() const {
  const DType dtype = core_->grads().dtype();
  const std::string source = !reduction_.accumulation ? "the working dtype, DeepSpeed's default grad_accum_dtype"
                                                      : "data_types.grad_accum_dtype";
  ZT_LOG(kInfo, "ZeRO stage " << stage_ << ": the rank's gradient partition (" << format_bytes(core_->grads().nbytes())
                              << ") is " << dtype_name(dtype)
                              << (stage_ == 1 ? ", and so are the whole gradients kept until the boundary" : "") << " ("
                              << source << ")");
}

// Each parameter's bucket and slot.
void ZeroEngine::place_gradients() {
  bucket_of_.assign(parameters_.size(), kNone);
  slot_of_.assign(parameters_.size(), 0);
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    for (std::size_t k = 0; k < layout_.buckets[b].parameters.size(); ++k) {
      bucket_of_[layout_.buckets[b].parameters[k]] = b;
      slot_of_[layout_.buckets[b].parameters[k]] = k;
    }
}

// Stages 0-2 stage at most two buckets of reduce_bucket_size at once, the one in flight
// included (DeepSpeed's two buffers under overlap_comm). Stage 3's buckets are whole modules,
// each complete right after its layer's backward; they are not bounded, and are reduced as
// soon as they are complete. With optimizer offload the fp32 gradients are in host memory,
// where the CPU Adam's threads add each reduced chunk.
GradientBuckets::Options ZeroEngine::bucket_options(const OffloadOptions& offload) const {
  const int host_threads = offload.threads > 0 ? offload.threads : ops::default_cpu_adam_threads();
  return {.dtype = reduction_.dtype.value_or(gradient_dtype_),
          .device = device_,  // not the partition's: under offload that is host memory
          .all_reduce = stage_ == 0,
          .overlap = reduction_.overlap && stage_ != 3,
          .most_staged = stage_ == 3 ? std::size_t{0} : std::size_t{2},
          .host_partition_threads = offload.gradients_on_host ? host_threads : 0};
}

// This rank's pieces of every bucket, where its chunks lie in its partition.
OwnedPartition ZeroEngine::owned_partition() const {
  OwnedPartition owned;
  owned.numel = layout_.partition_numel;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    for (const OwnedPiece& piece : layout_.owned_pieces(b, rank_)) {
      const Parameter& p = parameters_[piece.parameter];
      owned.spans.push_back({p.name, p.shape, piece.parameter_offset, layout_.partition_offset(b) + piece.chunk_offset,
                             piece.numel, p.decays});
      owned.initial.push_back(initial_values(b, piece));
    }
  return owned;
}

Tensor ZeroEngine::initial_values(std::size_t /*bucket*/, const OwnedPiece& piece) const {
  return flat(parameters_[piece.parameter].variable.data()).narrow(0, piece.parameter_offset, piece.numel);
}

Tensor ZeroEngine::owned(const Tensor& partition, std::size_t bucket) const {
  return partition.narrow(0, layout_.partition_offset(bucket), layout_.buckets[bucket].chunk());
}

std::string ZeroEngine::label(const std::string& what, std::size_t bucket) const {
  return "stage " + std::to_string(stage_) + " " + what + ", bucket " + std::to_string(bucket);
}

void ZeroEngine::on_gradient(std::size_t parameter, const Tensor& grad) {
  buckets_->add(bucket_of_[parameter], slot_of_[parameter], grad);
}

StepResult ZeroEngine::finish_step(const StepRequest& request) {
  buckets_->finish();
  log_host_gradients_once();
  const StepResult result =
      core_->step(request, gradient_norm(), [this](const Tensor& offloaded) { write_all_working_weights(offloaded); });
  measure_offload(result.skipped);
  return result;
}

// This step's share of the offload: the update's (none when skipped) and the additions of the
// reduced gradients into host memory since the last step.
void ZeroEngine::measure_offload(bool skipped) {
  if (!core_->offload()) return;
  OffloadStepTimes times = skipped ? OffloadStepTimes{} : core_->offload_times().value_or(OffloadStepTimes{});
  if (const HostGradientStats* sink = buckets_->host_gradients()) {
    times.cpu_seconds += sink->add_seconds - host_gradients_before_.add_seconds;
    times.wait_seconds += sink->waited_seconds - host_gradients_before_.waited_seconds;
    host_gradients_before_ = *sink;
  }
  offload_times_ = times;
}

// Rank 0, at its first step: what adding the reduced chunks to the host's fp32 gradients cost
// so far, and how much of it ran behind backward (the later steps' figures are alike).
void ZeroEngine::log_host_gradients_once() {
  const HostGradientStats* s = buckets_->host_gradients();
  if (s == nullptr || comm_.rank() != 0 || std::exchange(host_gradients_reported_, true)) return;
  const std::string copied =
      s->bytes > 0 ? " (" + format_bytes(static_cast<std::size_t>(s->bytes)) + " copied from the GPU)" : "";
  ZT_LOG(kInfo, "gradient offload: " << s->chunks << " reduced chunks added to the host's fp32 gradients" << copied
                                     << ", " << s->add_seconds << " s of additions, "
                                     << static_cast<int>(100.0 * s->hidden() + 0.5) << "% of them behind backward");
}

// Stage 0: every rank holds every gradient and measures the same norm. Later stages agree on
// it; on a GPU stages 1 and 2 sum the squares in float32 and stage 3 in float64, each as it
// always has, so that results stay the same bit for bit.
GradientNorm ZeroEngine::gradient_norm() const {
  if (stage_ == 0) return local_gradient_norm({core_->grads()});
  return agreed_gradient_norm(comm_, core_->grads(), device_,
                              "stage " + std::to_string(stage_) + " all-reduce gradient norm",
                              stage_ == 3 ? DType::kF64 : DType::kF32);
}

DType ZeroEngine::working_dtype(std::size_t b) const {
  return parameters_[layout_.buckets[b].parameters[0]].variable.data().dtype();
}

void ZeroEngine::write_all_working_weights(const Tensor& offloaded) {
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
    write_working_weights(b, offloaded.defined()
                                 ? owned(offloaded, b)
                                 : core_->working_from_masters(layout_.partition_offset(b), layout_.buckets[b].chunk(),
                                                               working_dtype(b)));
}

void ZeroEngine::write_working_weights(std::size_t b, const Tensor& chunk) {
  const ZeroBucket& bucket = layout_.buckets[b];
  Tensor full = chunk;
  if (layout_.world_size > 1) {
    full = Tensor::empty({bucket.padded_numel}, chunk.dtype(), device_);
    distributed::CollectiveLabel collective([&] { return label("all-gather updated weights", b); });
    comm_.all_gather(chunk, full);
  }
  for (std::size_t k = 0; k < bucket.parameters.size(); ++k)
    flat(parameters_[bucket.parameters[k]].variable.data())
        .copy_from(full.narrow(0, bucket.offsets[k], bucket.numels[k]));
}

void ZeroEngine::zero_grad() { core_->zero_grad(); }

// One bucket whole on the device at a time; each parameter's part goes to host memory.
std::map<std::string, Tensor> ZeroEngine::state_dict() const {
  std::map<std::string, Tensor> state;
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    const ZeroBucket& bucket = layout_.buckets[b];
    using Part = AdamWStepCore::StatePart;
    for (auto [suffix, part] : {std::pair{".master", Part::kMaster}, std::pair{".exp_avg", Part::kExpAvg},
                                std::pair{".exp_avg_sq", Part::kExpAvgSq}}) {
      // The collective runs where the gradients are.
      Tensor chunk = core_->state_range(part, layout_.partition_offset(b), bucket.chunk()).to(device_);
      Tensor full = chunk;
      if (layout_.world_size > 1) {
        full = Tensor::empty({bucket.padded_numel}, DType::kF32, device_);
        distributed::CollectiveLabel collective(
            [&] { return label("all-gather optimizer state " + std::string(suffix), b); });
        comm_.all_gather(chunk, full);
      }
      for (std::size_t k = 0; k < bucket.parameters.size(); ++k) {
        const Parameter& p = parameters_[bucket.parameters[k]];
        Tensor host = Tensor::empty(p.shape, DType::kF32, Device::cpu());
        flat(host).copy_from(full.narrow(0, bucket.offsets[k], bucket.numels[k]));
        state[p.name + suffix] = host;
      }
    }
  }
  return state;
}

std::vector<StateSlice> ZeroEngine::held_state() const { return core_->held_state(); }

HeldBuffers ZeroEngine::held_buffers() const {
  return {
      .state_numel = layout_.partition_numel,
      .gradient_bytes = (core_->gradients_in_host_block() ? 0 : static_cast<std::int64_t>(core_->grads().nbytes())) +
                        buckets_->staged_bytes(),
      .working_bytes = std::nullopt,
      .offload = core_->offload()};
}

}  // namespace zt::train
