#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <optional>

#include "autograd/functions.h"
#include "distributed/communicators/collective_label.h"
#include "models/token_loss.h"
#include "ops/optim/cpu_adam.h"
#include "runtime/atomic_file.h"
#include "runtime/device_clock.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/rank.h"
#include "runtime/stop_signals.h"
#include "train/checkpoint/checkpoint.h"
#include "train/evaluation.h"
#include "train/report/interruption_report.h"
#include "train/report/loss_curve.h"
#include "train/report/tensorboard_destination.h"
#include "train/zero/single_rank_note.h"
#include "train/zero/zero3_optimizer.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

// HF prints each log entry as a Python dict; the same look keeps users' log parsers working.
std::string log_line(const nlohmann::json& entry) {
  std::string line = "{";
  for (const auto& [key, value] : entry.items()) {
    if (key == "step") continue;
    line += (line.size() > 1 ? ", '" : "'") + key + "': " + value.dump();
  }
  return line + "}";
}

double round_to(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The fused loss forms its gradients in the forward, multiplied by grad_scale, and backward
// multiplies them by (upstream gradient / grad_scale). With grad_scale the factor backward
// brings (rounded to float, as the float32 loss's upstream gradient is), that correction is
// exactly 1 and float16 logit gradients carry the loss scale, as unfused ones would. A factor
// beyond float's range overflows the gradients either way, and the step is skipped.
double fused_grad_scale(double loss_factor) {
  const auto rounded = static_cast<float>(loss_factor);
  return std::isfinite(rounded) ? rounded : loss_factor;
}

std::optional<double> peak_flops_of(Device device) {
  if (!device.is_cuda()) return std::nullopt;
  return gpu_peak_flops(device_properties(device.index), sm_clock_khz(device.index));
}

// HF's logging strategies, and logging_first_step; zerotune also logs the last step, whatever
// its number, unless told not to log.
bool log_due(const TrainingPlan& plan, std::int64_t step, bool epoch_ended) {
  if (plan.logging_first_step && step == 1) return true;
  switch (plan.logging_strategy) {
    case IntervalStrategy::kNo:
      return false;
    case IntervalStrategy::kEpoch:
      return epoch_ended || step == plan.max_steps;
    default:
      return step % plan.logging_steps == 0 || step == plan.max_steps;
  }
}

// --report_to tensorboard and DeepSpeed's tensorboard block: an event file in each folder they
// name, and the folders said once, with the command that shows them.
std::unique_ptr<TensorBoardLog> open_tensorboard(const TrainingPlan& plan, std::optional<std::int64_t> resumed_step) {
  const std::vector<std::string> folders = tensorboard_folders(plan.tensorboard, std::time(nullptr));
  if (folders.empty()) return nullptr;
  auto log = std::make_unique<TensorBoardLog>(folders, plan.arguments_json, resumed_step);
  for (const std::string& folder : folders)
    ZT_LOG(kInfo, "TensorBoard event files go to " << folder << " (tensorboard --logdir " << folder << ")");
  return log;
}

// HF's evaluation strategies, none before eval_delay steps (or epochs).
bool evaluation_due(const TrainingPlan& plan, std::int64_t step, double epoch, bool epoch_ended) {
  if (plan.eval_strategy == IntervalStrategy::kSteps)
    return step % plan.eval_steps == 0 && static_cast<double>(step) >= plan.eval_delay;
  return plan.eval_strategy == IntervalStrategy::kEpoch && epoch_ended && epoch >= plan.eval_delay;
}

nlohmann::json eval_entry(double eval_loss, const TrainerState& state) {
  return {{"eval_loss", round_to(eval_loss, 4)}, {"epoch", round_to(state.epoch, 4)}, {"step", state.global_step}};
}

std::unique_ptr<OptimizerEngine> make_optimizer(const TrainerModel& model, const TrainingPlan& plan,
                                                distributed::Communicator* comm) {
  // Delayed, the CPU Adam runs while this thread launches the next step's kernels: it leaves
  // that thread a core.
  const int adam_threads = ops::default_cpu_adam_threads(plan.zero.offload_cpu_cores_share);
  const OffloadOptions offload{
      .enabled = plan.zero.offload_optimizer,
      .pin_memory = plan.zero.offload_pin_memory,
      .threads = plan.offload_delayed_update ? std::max(1, adam_threads - 1) : adam_threads,
      .ratio = plan.zero.offload_ratio,
      // The delayed update reads the gradients while the next step adds
      // new ones: they stay on the device, copied out once a step.
      .gradients = plan.offload_delayed_update ? GradientPlacement::kDevice : GradientPlacement::kAuto,
      .accumulation = plan.accumulation,
      .delayed_update = plan.offload_delayed_update};
  const EngineChoice engine = choose_engine(plan, comm != nullptr);
  const std::vector<TrainableParameter> trainable = weight_decay_groups(model.trainable, plan.optimizer);
  if (!engine.needs_ranks()) return std::make_unique<Optimizer>(trainable, plan.optimizer, offload);
  ZT_REQUIRE(comm != nullptr,
             "trainer: ZeRO stage 3 with parameter offload runs over a communicator, even of one rank; none was given");
  if (engine.kind == EngineKind::kZero3)
    return std::make_unique<Zero3Optimizer>(*model.model, trainable, plan.optimizer, *comm, plan.zero, offload);
  return std::make_unique<ZeroOptimizer>(trainable, plan.optimizer, *comm, plan.zero.stage,
                                         plan.zero.reduce_bucket_size, offload,
                                         GradientReduction{.dtype = plan.zero.communication_data_type,
                                                           .overlap = plan.zero.overlap_comm,
                                                           .accumulation = plan.zero.grad_accum_dtype});
}

}  // namespace

Trainer::Trainer(TrainerModel model, TrainerData data, TrainingPlan plan, distributed::Communicator* communicator)
    : model_(std::move(model)),
      data_(std::move(data)),
      plan_(std::move(plan)),
      comm_(communicator),
      optimizer_(make_optimizer(model_, plan_, comm_)),
      scaler_(plan_.loss_scaler.value_or(LossScalerConfig{.static_scale = 1.0})),
      schedule_(plan_.schedule) {
  ZT_REQUIRE(model_.model, "trainer: no model");
  ZT_REQUIRE(!model_.trainable.empty(), "trainer: nothing to train (no trainable parameter)");
  flops_model_ = flops_model(model_.model->config(), model_.model->num_parameters());
  peak_flops_ = peak_flops_of(model_.model->device());
  if (plan_.wall_clock_breakdown) wall_clock_ = std::make_unique<WallClockBreakdown>(model_.model->device());
  if (plan_.profile_steps > 0)
    profile_ = std::make_unique<StepProfileSession>(model_.model->device(), plan_.profile_steps, plan_.output_dir,
                                                    is_main_rank());
  state_.max_steps = plan_.max_steps;
  state_.logging_steps = plan_.logging_steps;
  state_.eval_steps = plan_.eval_steps;
  state_.save_steps = plan_.save_steps;
  state_.train_batch_size = plan_.micro_batch;
  state_.num_train_epochs = plan_.num_train_epochs;
  // The plan's warnings are the same on every rank: rank 0 prints them once for the job.
  if (!is_main_rank()) return;
  for (const std::string& warning : plan_.warnings) ZT_LOG(kWarn, warning);
  if (world_size() == 1)
    if (const auto note = single_rank_zero_note({.stage = plan_.zero.stage,
                                                 .zero_engine = choose_engine(plan_, comm_ != nullptr).needs_ranks(),
                                                 .offload = plan_.zero.offload_optimizer,
                                                 .offload_param = plan_.zero.offload_param,
                                                 .grad_accum_16bit = plan_.zero.grad_accum_dtype.has_value() &&
                                                                     *plan_.zero.grad_accum_dtype != DType::kF32}))
      ZT_LOG(kWarn, *note);
}

// Runs `write` on the main rank with the model's weights readable. Under ZeRO-3 every rank
// takes part: the weights are gathered module by module into the main rank's host memory,
// never whole on one GPU.
void Trainer::on_main_rank_with_weights(const std::function<void()>& write) {
  optimizer_->with_whole_weights(plan_.saves_only_trainable, [&] {
    if (is_main_rank()) write();
  });
}

// As HF counts it: the micro-batches this rank has run over those it runs in the epoch.
double Trainer::epoch_progress() const {
  const auto batches = static_cast<double>(std::max<std::size_t>(1, local_batch_count(epoch_units_.size())));
  return static_cast<double>(position_.epoch) + static_cast<double>(local_batch_count(position_.units)) / batches;
}

std::size_t Trainer::global_batch_units() const {
  return static_cast<std::size_t>(plan_.micro_batch * plan_.accumulation * world_size());
}

// The micro-batches each rank runs for the first `units` units of an epoch, dealt step by step.
std::size_t Trainer::local_batch_count(std::size_t units) const {
  const auto micro = static_cast<std::size_t>(plan_.micro_batch);
  const auto world = static_cast<std::size_t>(world_size());
  return ((units + micro - 1) / micro + world - 1) / world;
}

void Trainer::start_epoch(std::int64_t epoch) {
  position_ = {.epoch = epoch, .units = 0};
  epoch_units_ = model_.preference
                     ? pair_units(data_.train.size() / 2, plan_.data_order_seed, epoch)
                     : epoch_units(data_.train, plan_.max_length, plan_.packing, plan_.data_order_seed, epoch);
}

// This rank's share of the next global batch: up to `accumulation` micro-batches (the last
// global batch of an epoch may be short, as HF's last window is). Where a rank's share of a
// short one runs out, it makes filler passes on the batch's first sample.
std::vector<PackedBatch> Trainer::next_window() {
  if (epoch_units_.empty())
    start_epoch(position_.epoch);
  else if (epoch_ended())
    start_epoch(position_.epoch + 1);
  const std::size_t count = std::min(global_batch_units(), epoch_units_.size() - position_.units);
  const std::span<const BatchUnit> global_batch(epoch_units_.data() + position_.units, count);
  position_.units += count;
  const int rank = comm_ ? comm_->rank() : 0;
  std::vector<PackedBatch> window;
  for (const auto& indices : deal_global_batch(global_batch, plan_.micro_batch, world_size(), rank))
    window.push_back(indices.empty() ? filler_batch(data_.train, global_batch.front().front(), data_.layout)
                                     : pack(data_.train, indices, data_.layout));
  return window;
}

// Samples, not micro-batches: the position then means the same on any number of ranks.
std::size_t Trainer::samples_in_epoch() const {
  std::size_t samples = 0;
  for (std::size_t u = 0; u < position_.units; ++u) samples += epoch_units_[u].size();
  return samples;
}

void Trainer::restore_data_position(const nlohmann::json& run_state) {
  start_epoch(run_state.at("epoch").get<std::int64_t>());
  if (!run_state.contains("samples_in_epoch")) {
    // Older checkpoints counted each rank's micro-batches; they resumed rightly only on the
    // world size that saved them, which is taken to be this one.
    const std::size_t micro_batches = run_state.at("batch_in_epoch").get<std::size_t>() * world_size();
    position_.units = std::min(epoch_units_.size(), micro_batches * static_cast<std::size_t>(plan_.micro_batch));
    return;
  }
  const auto samples = run_state.at("samples_in_epoch").get<std::size_t>();
  std::size_t seen = 0;
  while (seen < samples && position_.units < epoch_units_.size()) seen += epoch_units_[position_.units++].size();
  ZT_REQUIRE(seen == samples, "resuming: the checkpoint stopped " + std::to_string(samples) + " samples into epoch " +
                                  std::to_string(position_.epoch) +
                                  ", which falls inside a packed row or past the end of this data; resume with the "
                                  "--train_file, --max_length, --packing and --seed it was trained with");
}

double Trainer::sum_over_ranks(double value, const char* what) const {
  if (!comm_) return value;
  distributed::CollectiveLabel label([what] { return std::string("trainer: sum of ") + what; });
  Tensor buffer = Tensor::full({1}, value, DType::kF64).to(model_.model->device());
  comm_->all_reduce(buffer, distributed::ReduceOp::kSum);
  return buffer.to_vector().at(0);
}

// A launcher forwards the signal to every rank, but each sees it at its own moment: the ranks
// agree before each step, so that all of them stop after the same one.
int Trainer::stop_signal_of_any_rank() const {
  if (!comm_) return stop_signal_received();
  distributed::CollectiveLabel label([] { return std::string("trainer: stop signal of any rank"); });
  Tensor buffer = Tensor::full({1}, stop_signal_received(), DType::kF64).to(model_.model->device());
  comm_->all_reduce(buffer, distributed::ReduceOp::kMax);
  return static_cast<int>(buffer.to_vector().at(0));
}

void Trainer::report_interruption() const {
  if (!is_main_rank()) return;
  const Interruption stop{
      .signal = stopped_by_,
      .step = state_.global_step,
      .max_steps = plan_.max_steps,
      .last_checkpoint = last_checkpoint_,
      .saves_checkpoints = plan_.save_strategy != IntervalStrategy::kNo,
      .save_steps = plan_.save_strategy == IntervalStrategy::kSteps ? std::optional(plan_.save_steps) : std::nullopt,
      .launched = rank_from_environment().distributed};
  ZT_LOG(kWarn, interruption_message(stop, own_command_line()));
}

// Forward and backward of one micro-batch; returns its summed token loss.
double Trainer::forward_backward(const PackedBatch& batch, double loss_factor) {
  const models::PackedBatch tensors = device_batch(batch, model_.model->device());
  // ZeRO-3 learns the order a micro-batch gathers modules in and prefetches along it.
  optimizer_->begin_micro_batch();
  using Phase = WallClockBreakdown::Phase;
  autograd::Variable loss_sum;
  double value = 0.0;
  {
    PhaseTimer timing(wall_clock_.get(), Phase::kForward);
    if (model_.preference) {
      PreferenceStep step =
          model_.preference->forward(*model_.model, tensors, static_cast<std::size_t>(loss_units(batch)),
                                     fused_grad_scale(loss_factor), batch.samples);
      loss_sum = step.surrogate;
      value = step.loss_sum;
    } else {
      loss_sum = models::summed_token_loss(*model_.model, tensors, fused_grad_scale(loss_factor));
      value = loss_sum.data().to_vector().at(0);
    }
  }
  {
    PhaseTimer timing(wall_clock_.get(), Phase::kBackwardInner);
    autograd::scale(loss_sum, loss_factor).backward();
  }
  {
    PhaseTimer timing(wall_clock_.get(), Phase::kBackwardAllreduce);
    ProfileRegion region(OpFamily::kGradAccumulate);
    optimizer_->end_micro_batch();
  }
  if (!batch.filler) {
    state_.num_input_tokens_seen += batch.whole_sequences().back();
    throughput_.add_batch(batch.whole_sequences());
  }
  return value;
}

std::int64_t Trainer::loss_units(const PackedBatch& batch) const {
  if (!model_.preference) return batch.label_tokens;
  return batch.filler ? 0 : static_cast<std::int64_t>(batch.cu_seqlens.size() - 1) / 2;
}

double Trainer::run_optimizer_step() {
  const auto start = std::chrono::steady_clock::now();
  if (profile_) profile_->begin(state_.global_step + 1);
  std::vector<PackedBatch> window = next_window();
  std::int64_t units = 0;
  for (const PackedBatch& batch : window) units += loss_units(batch);
  // The mean over every label token (preference pair) of the global batch; ZeRO sums
  // gradients over ranks.
  const double normaliser =
      std::max(1.0, sum_over_ranks(static_cast<double>(units), "the global batch's label tokens (or pairs)"));
  double loss_sum = 0.0;
  for (std::size_t i = 0; i < window.size(); ++i) {
    loss_sum += forward_backward(window[i], scaler_.scale() / normaliser);
    if (i + 1 < window.size()) log_wall_clock(false);
  }
  loss_sum = sum_over_ranks(loss_sum, "the global batch's token losses");

  const double lr = schedule_.rate(scheduler_step_);
  StepResult result;
  {
    PhaseTimer timing(wall_clock_.get(), WallClockBreakdown::Phase::kStep);
    ProfileRegion region(OpFamily::kOptimizer);
    result = optimizer_->step(lr, scaler_.scale(), plan_.max_grad_norm, scheduler_step_ + 1);
    optimizer_->zero_grad();
  }
  log_wall_clock(true);
  if (profile_) {
    progress_.clear();
    profile_->end(state_.global_step + 1);
  }
  if (plan_.loss_scaler) {
    const double old_scale = scaler_.scale();
    scaler_.update(result.skipped);
    if (result.skipped) {
      progress_.clear();
      ZT_LOG(kWarn, "step " << state_.global_step + 1 << ": gradient overflow, step skipped; loss scale " << old_scale
                            << " -> " << scaler_.scale());
    }
  } else {
    ZT_REQUIRE(!result.skipped, "step " + std::to_string(state_.global_step + 1) +
                                    ": the gradients are not finite (loss " + std::to_string(loss_sum / normaliser) +
                                    "); lower --learning_rate or check the data");
  }
  if (!result.skipped) ++scheduler_step_;
  ++state_.global_step;
  state_.epoch = epoch_progress();
  const double step_loss = loss_sum / normaliser;
  train_loss_sum_ += step_loss;
  throughput_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  maybe_log(step_loss, result, lr);
  progress_.update(state_.global_step, step_loss);
  return step_loss;
}

void Trainer::log_wall_clock(bool step_ended) {
  if (!wall_clock_) return;
  const std::string micro = wall_clock_->micro_step_line();
  const std::string step = step_ended ? wall_clock_->step_line() : "";
  if (!is_main_rank()) return;
  progress_.clear();
  ZT_LOG(kInfo, micro);
  if (step_ended) ZT_LOG(kInfo, step);
}

void Trainer::maybe_log(double step_loss, const StepResult& result, double lr) {
  loss_since_log_ += step_loss;
  ++steps_since_log_;
  grad_norm_ = result.grad_norm;
  if (!log_due(plan_, state_.global_step, epoch_ended())) return;
  nlohmann::json entry = {{"loss", round_to(loss_since_log_ / steps_since_log_, 4)},
                          {"grad_norm", grad_norm_},
                          {"learning_rate", lr},
                          {"epoch", round_to(state_.epoch, 4)},
                          {"step", state_.global_step}};
  if (model_.preference)
    model_.preference->log_metrics(entry,
                                   [this](double value, const char* what) { return sum_over_ranks(value, what); });
  add_throughput(entry);
  add_memory(entry);
  add_offload(entry);
  if (plan_.loss_scaler) {
    entry["loss_scale"] = scaler_.scale();
    entry["skipped_steps"] = state_.global_step - scheduler_step_;  // the schedule skips them too
  }
  record(entry);
  loss_since_log_ = 0.0;
  steps_since_log_ = 0;
}

// Tokens of every rank over rank 0's wall time of the steps since the last entry; mfu is the
// FLOPs they needed over what the GPUs could have done meanwhile.
void Trainer::add_throughput(nlohmann::json& entry) {
  const double tokens = sum_over_ranks(throughput_.tokens, "tokens since the last log");
  const double squared_lengths = sum_over_ranks(throughput_.squared_lengths, "squared sequence lengths (MFU)");
  const double seconds = std::max(throughput_.seconds, 1e-9);
  throughput_ = {};
  entry["tokens_per_second"] = round_to(tokens / seconds, 1);
  if (!peak_flops_) return;
  const double world = comm_ ? comm_->world_size() : 1;
  entry["mfu"] = round_to(training_flops(flops_model_, tokens, squared_lengths) / (seconds * *peak_flops_ * world), 4);
}

// This rank's device memory in the caching allocator: held by tensors now, and the most ever.
void Trainer::add_memory(nlohmann::json& entry) const {
  const Device device = model_.model->device();
  if (!device.is_cuda()) return;
  const AllocatorStats stats = device_allocator(device.index).stats();
  entry["memory_allocated_gib"] = round_to(static_cast<double>(stats.allocated_bytes) / kGiB, 3);
  entry["memory_peak_gib"] = round_to(static_cast<double>(stats.peak_allocated_bytes) / kGiB, 3);
}

// The last step's offload work, in seconds (docs/ZERO.md, The offload schedule): CPU work
// (CPU Adam, gradient additions), copies, the time the step waited for them, and the share
// of the work that ran behind the device's own.
void Trainer::add_offload(nlohmann::json& entry) const {
  const std::optional<OffloadStepTimes> times = optimizer_->offload_times();
  if (!times) return;
  entry["offload_cpu_s"] = round_to(times->cpu_seconds, 4);
  entry["offload_copy_s"] = round_to(times->copy_seconds, 4);
  entry["offload_wait_s"] = round_to(times->wait_seconds, 4);
  entry["offload_hidden"] = round_to(times->hidden(), 3);
}

void Trainer::record(const nlohmann::json& entry) {
  state_.log_history.push_back(entry);
  if (log_file_) log_file_->append(entry);
  if (tensorboard_) tensorboard_->append(entry);
  progress_.clear();
  ZT_LOG(kInfo, log_line(entry));
}

double Trainer::evaluate() {
  ZT_REQUIRE(!data_.eval.empty(), "evaluate: no evaluation data (--validation_file)");
  return evaluation_loss(*model_.model, data_.eval, plan_.eval_micro_batch, plan_.max_length, data_.layout).mean();
}

nlohmann::json Trainer::evaluation_entry(double* eval_loss) {
  if (!model_.preference) {
    const double loss = evaluate();
    if (eval_loss) *eval_loss = loss;
    return eval_entry(loss, state_);
  }
  ZT_REQUIRE(!data_.eval.empty(), "evaluate: no evaluation data (--validation_file)");
  nlohmann::json entry = model_.preference->evaluate(*model_.model, data_.eval, plan_.eval_micro_batch, data_.layout);
  if (eval_loss) *eval_loss = entry["eval_loss"].get<double>();
  entry["eval_loss"] = round_to(entry["eval_loss"].get<double>(), 4);
  entry["epoch"] = round_to(state_.epoch, 4);
  entry["step"] = state_.global_step;
  return entry;
}

// reduce_lr_on_plateau: HF's Trainer steps it with each evaluation's metric during training
// (not the evaluation on start, nor do_eval's at the end).
void Trainer::step_plateau_schedule(double eval_loss) {
  const double before = schedule_.rate(scheduler_step_);
  if (!schedule_.observe_metric(eval_loss) || !is_main_rank()) return;
  progress_.clear();
  ZT_LOG(kInfo, "step " << state_.global_step << ": eval_loss has not improved on " << schedule_.plateau_state().best
                        << " for more than " << plan_.schedule.plateau.patience
                        << " evaluations (reduce_lr_on_plateau): learning rate " << before << " -> "
                        << schedule_.rate(scheduler_step_));
}

// An update still running behind the steps (--offload_delayed_update) lands before the
// weights are evaluated or saved: what is measured and saved at step n has n updates.
void Trainer::maybe_evaluate_and_save(bool epoch_ended) {
  const std::int64_t step = state_.global_step;
  const bool evaluate_now = evaluation_due(plan_, step, state_.epoch, epoch_ended);
  const bool save_now = (plan_.save_strategy == IntervalStrategy::kSteps && step % plan_.save_steps == 0) ||
                        (plan_.save_strategy == IntervalStrategy::kEpoch && epoch_ended);
  if (evaluate_now || save_now) optimizer_->settle();
  if (evaluate_now) {
    double eval_loss = 0.0;
    record(evaluation_entry(&eval_loss));
    step_plateau_schedule(eval_loss);
  }
  if (save_now) save_checkpoint_now();
}

TrainerState Trainer::train() {
  const StopSignalScope stop_signals;
  const bool resuming = !plan_.resume_from_checkpoint.empty();
  if (resuming) resume(resolve_resume_checkpoint(plan_.resume_from_checkpoint, plan_.output_dir));
  // precompute_ref_log_probs: the reference's log-probabilities of every pair, once, before the
  // first step (a resumed run has them from its checkpoint).
  if (model_.preference && model_.preference->precomputes() && !model_.preference->has_precomputed()) {
    if (is_main_rank())
      ZT_LOG(kInfo, "precomputing the reference log-probabilities of every pair (precompute_ref_log_probs)");
    const std::int64_t per_batch = std::max(plan_.micro_batch, plan_.eval_micro_batch);
    model_.preference->set_precomputed(
        model_.preference->precompute_reference(*model_.model, data_.train, per_batch, data_.layout),
        model_.preference->precompute_reference(*model_.model, data_.eval, per_batch, data_.layout));
  }
  // Resumed, the file restarts from the checkpoint's log_history: it and trainer_state.json agree.
  if (is_main_rank()) {
    log_file_ = std::make_unique<TrainLogFile>(plan_.output_dir, state_.log_history);
    tensorboard_ = open_tensorboard(plan_, resuming ? std::optional(state_.global_step) : std::nullopt);
  }
  const bool bar = is_main_rank() && ProgressBar::stderr_is_terminal() && plan_.progress_bar;
  progress_ = ProgressBar(state_.global_step, plan_.max_steps, bar);
  if (plan_.eval_on_start) record(evaluation_entry());
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t first_step = state_.global_step;
  while (state_.global_step < plan_.max_steps && (stopped_by_ = stop_signal_of_any_rank()) == 0) {
    run_optimizer_step();
    maybe_evaluate_and_save(epoch_ended());
  }
  optimizer_->settle();
  if (stopped_by_ != 0) {
    progress_.clear();
    report_interruption();
    return state_;
  }
  progress_.finish();
  if (profile_) profile_->finish();
  // --do_eval: one more evaluation at the end, as HF's example scripts run, unless the last
  // step has just been evaluated.
  const nlohmann::json& last = state_.log_history.empty() ? nlohmann::json() : state_.log_history.back();
  const bool evaluated_last = last.contains("eval_loss") && last.value("step", std::int64_t{-1}) == state_.global_step;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto steps = static_cast<double>(state_.global_step - first_step);
  nlohmann::json summary = {{"train_runtime", round_to(seconds, 4)},
                            {"train_steps_per_second", round_to(steps / std::max(seconds, 1e-9), 3)},
                            {"train_loss", steps > 0 ? train_loss_sum_ / steps : 0.0},
                            {"epoch", round_to(state_.epoch, 4)},
                            {"step", state_.global_step}};
  record(summary);
  if (plan_.eval_at_end && !evaluated_last) record(evaluation_entry());
  if (comm_) {  // no rank reads the output before it is complete
    distributed::CollectiveLabel label([] { return std::string("trainer: barrier before the final save"); });
    comm_->barrier();
  }
  on_main_rank_with_weights([&] {
    std::filesystem::create_directories(plan_.output_dir);
    model_.save(plan_.output_dir);
    write_file_atomically((std::filesystem::path(plan_.output_dir) / "trainer_state.json").string(),
                          to_json(state_).dump(2) + "\n");
    write_loss_curves(plan_.output_dir, state_.log_history);
  });
  return state_;
}

}  // namespace zt::train
