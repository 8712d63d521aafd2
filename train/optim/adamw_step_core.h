// The AdamW step, once for every optimizer engine: the single-device Optimizer
// (train/optim/optimizer.h), ZeRO stages 0-2 (train/zero/zero_optimizer.h) and ZeRO-3
// (train/zero/zero3_optimizer.h) only say which parts of which parameters a rank owns and
// how their working weights take the new values.
//
// A rank's fp32 master weights, Adam moments and gradients (fp32, or 16-bit under ZeRO stages
// 1-2 as DeepSpeed's grad_accum_dtype makes them) are one flat partition each (on
// the device; master and moments in host memory with offload, and the gradients too when the
// offload options say the engine accumulates them there). Its spans say which run of
// the partition is which part of which parameter; the rest is padding. One step:
//   norm     the gradient norm with the verdict on inf/NaN, agreed by every rank in one
//            all-reduce (under fp16 every rank skips the same steps), or measured alone
//            where every rank holds the same gradients; an overflowed step is skipped
//   clip     DeepSpeed's combined divisor: the loss scale, times the clip factor
//   decay    decoupled (AdamW), or first added to the gradient (Adam with L2 regularisation;
//            to an fp32 copy of a 16-bit gradient, as DeepSpeed's Adam adds it in fp32)
//   update   every span in one multi-tensor update on the device, or, with offload
//            (train/optim/optimizer_offload.h), tile by tile on the host; a partial offload
//            (ratio below 1) keeps the first spans on the device and updates both at once;
//            the delayed update leaves the host's update running into the next step
//   weights  the engine writes its working weights: from the masters, or from the new
//            weights the offload sends back
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "distributed/communicator.h"
#include "ops/optim/adamw.h"
#include "train/optim/gradient_segments.h"
#include "train/optim/optimizer.h"
#include "train/optim/optimizer_offload.h"

namespace zt::train {

// OptimizerEngine::step's arguments.
struct StepRequest {
  double lr = 0.0;
  double loss_scale = 1.0;
  double max_grad_norm = 0.0;  // 0: no clipping
  std::int64_t step = 1;
};

// A step's gradient norm, still multiplied by the loss scale, and whether the gradients of
// some rank held an inf or NaN.
struct GradientNorm {
  double scaled = 0.0;
  bool overflow = false;
};

// Measured on this rank's gradients alone: where every rank holds the same gradients.
GradientNorm local_gradient_norm(const std::vector<Tensor>& grads);
// Over every rank's `grads` (each its own part of the gradients): the squared norm and an
// overflow flag summed in one all-reduce, labelled `label`, so that every rank takes the
// same verdict. The all-reduce runs on `device` (where the communicator works, which the
// gradients may not be on), in float64, on a GPU in `gpu_dtype`.
GradientNorm agreed_gradient_norm(distributed::Communicator& comm, const Tensor& grads, Device device,
                                  const std::string& label, DType gpu_dtype);

// The divisor of the gradients: the loss scale, times the clip factor when the (unscaled)
// norm exceeds max_grad_norm (0: no clipping).
double clip_divisor(double grad_norm, double loss_scale, double max_grad_norm);

// Whether update_weight_decay adds `decay` to the gradient (L2 regularisation) rather than
// leaving it to the update (decoupled, or none).
bool update_weight_decay_couples(double decay, const OptimizerConfig& config);

// The weight decay the update itself applies to a run of parameters: `decay` when decoupled;
// otherwise none, once decay * master has been added to the gradient, scaled like it by
// `grad_scale` (Adam with L2 regularisation).
double update_weight_decay(const Tensor& grad, const Tensor& master, double decay, const OptimizerConfig& config,
                           double grad_scale);

// The run of a rank's partition that holds elements [parameter_offset, parameter_offset +
// numel) of one parameter.
struct OwnedSpan {
  std::string name;  // the parameter's
  Shape shape;       // the whole parameter's
  std::int64_t parameter_offset = 0;
  std::int64_t offset = 0;  // in the partition
  std::int64_t numel = 0;
  bool decays = true;  // TrainableParameter::weight_decay
  // When defined, the parameter (held whole by the span) whose working weights the device
  // update writes itself, so that they need no copy afterwards.
  autograd::Variable writes = {};
};

// What an engine owns: the partition's size, padding included, and its spans with their
// values now (any dtype and device), from which the master weights start.
struct OwnedPartition {
  std::int64_t numel = 0;
  std::vector<OwnedSpan> spans = {};
  std::vector<Tensor> initial = {};  // per span
  // The gradients' dtype: fp32, or the working dtype where ZeRO stages 1-2 keep 16-bit
  // gradients (DeepSpeed's grad_accum_dtype, train/zero/zero_engine.h); never with offload.
  DType gradient_dtype = DType::kF32;
  // Held per step in segments (train/optim/gradient_segments.h), from the first gradient that
  // reaches each to the update: the single-device optimizer's, without offload. Otherwise one
  // flat buffer held for the whole run (ZeRO's buckets and the offload read it flat).
  bool segmented_gradients = false;
};

class AdamWStepCore {
 public:
  // Gradients live on `device` (in the offload's host block under offload.gradients_on_host),
  // and master and moments too unless `offload` moves them to host memory, from where weights of the one dtype of
  // `trainable` come back. Moments, gradients and padding start at zero.
  AdamWStepCore(const OptimizerConfig& config, OwnedPartition owned, Device device, const OffloadOptions& offload,
                const std::vector<TrainableParameter>& trainable);
  AdamWStepCore(const AdamWStepCore&) = delete;
  AdamWStepCore& operator=(const AdamWStepCore&) = delete;

  enum class StatePart { kMaster, kExpAvg, kExpAvgSq };
  // `numel` fp32 elements of one state from `offset` in the partition: a view where they lie
  // in one place (the device's share, or the offload's host block), else a copy on the device.
  Tensor state_range(StatePart part, std::int64_t offset, std::int64_t numel) const;
  std::int64_t numel() const { return numel_; }
  // Flat, of the partition's numel, in OwnedPartition::gradient_dtype; not with segmented
  // gradients, whose spans span_gradient() gives.
  const Tensor& grads() const;
  // Span `i`'s gradient, [numel]: a view of grads(), or of its segment (allocated zeroed first
  // when not held).
  Tensor span_gradient(std::size_t i);
  // Every span's gradient (with segments, every segment then held).
  std::vector<Tensor> span_gradients();
  const std::vector<OwnedSpan>& spans() const { return spans_; }
  // Null without offload.
  const OptimizerOffload* offload() const { return offload_.get(); }
  // The last update's offload work (no gradient additions: the engine adds its own); nullopt
  // without offload.
  std::optional<OffloadStepTimes> offload_times() const;
  // The gradients are the offload's host block (OffloadOptions::gradients_on_host).
  bool gradients_in_host_block() const { return offload_ && offload_->host_grads().data_ptr() == grads_.data_ptr(); }

  void zero_grad();
  // One slice per span, viewing the state.
  std::vector<StateSlice> held_state() const;

  // One update from grads(), whose norm is `norm`. Unless the step is skipped,
  // `write_working` then brings the engine's working weights up to date, given the
  // offload's new weights (the partition in the working dtype, on the device) or, without
  // offload, an undefined tensor: the masters hold the new values.
  StepResult step(const StepRequest& request, const GradientNorm& norm,
                  const std::function<void(const Tensor& offloaded)>& write_working);

  // Under the delayed update (OffloadOptions::delayed_update) step() lands the previous
  // step's update and starts its own, which runs on while the next forward and backward do.
  // settle() lands a started update now, writing its weights as step() would: before the
  // weights or the state are read (evaluation, saving, the end of training). False when
  // nothing was running.
  bool settle(const std::function<void(const Tensor& offloaded)>& write_working);

  // `numel` master weights from `offset`, in `dtype` on the gradients' device.
  Tensor working_from_masters(std::int64_t offset, std::int64_t numel, DType dtype) const;

 private:
  void update_on_device(const ops::AdamWConfig& adam);

  OptimizerConfig config_;
  std::vector<OwnedSpan> spans_;
  std::int64_t numel_ = 0;
  Device device_;
  std::int64_t split_ = 0;                // [0, split_) on the device, [split_, numel_) in the offload's host block
  Tensor master_, exp_avg_, exp_avg_sq_;  // the device's share
  Tensor grads_;                          // the whole partition, unless segmented
  std::unique_ptr<GradientSegments> segments_;
  std::unique_ptr<OptimizerOffload> offload_;
  bool delayed_ = false;
};

}  // namespace zt::train
