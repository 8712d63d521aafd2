// Learning-rate schedules: the rate of each optimizer update, counted t = 0, 1, 2... over the
// updates applied (a skipped fp16 step does not advance it). HF Trainer's names from
// transformers' get_scheduler are torch LambdaLR factors of the peak rate, so update t trains
// at factor(t), written as transformers' optimization.py writes each (same operations in the
// same order, so the rates agree to the last bit); reduce_lr_on_plateau is torch's
// ReduceLROnPlateau, stepped by the trainer with each evaluation's eval_loss (observe_metric).
// DeepSpeed's `scheduler` block types follow DeepSpeed's lr_schedules.py and its
// engine's order: the scheduler sets the first rate when it is built (its get_lr with
// last_batch_iteration -1) and the engine steps it after every applied update, so update t
// trains at get_lr(t - 1). WarmupLR and WarmupDecayLR therefore train their first two
// updates at warmup_min_lr, and WarmupCosineLR its first at 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt::train {

enum class ScheduleKind {
  kLinear,                 // HF "linear"
  kCosine,                 // HF "cosine"
  kCosineWithRestarts,     // HF "cosine_with_restarts"
  kPolynomial,             // HF "polynomial"
  kConstant,               // HF "constant"
  kConstantWithWarmup,     // HF "constant_with_warmup"
  kInverseSqrt,            // HF "inverse_sqrt"
  kReduceOnPlateau,        // HF "reduce_lr_on_plateau"
  kCosineWithMinLr,        // HF "cosine_with_min_lr"
  kCosineWarmupWithMinLr,  // HF "cosine_warmup_with_min_lr"
  kWarmupStableDecay,      // HF "warmup_stable_decay"
  kWarmupLR,               // DeepSpeed "WarmupLR"
  kWarmupDecayLR,          // DeepSpeed "WarmupDecayLR"
  kWarmupCosineLR,         // DeepSpeed "WarmupCosineLR"
  kOneCycle,               // DeepSpeed "OneCycle" (learning rate only: momentum cycling is refused)
  kLRRangeTest,            // DeepSpeed "LRRangeTest"
};

// DeepSpeed's OneCycle: a triangle from min_lr up to max_lr over first_step_size updates and
// back over second_step_size, then min_lr / (1 + decay_lr_rate * n / decay_step_size).
struct OneCycleConfig {
  double min_lr = 0.0;
  double max_lr = 0.0;
  double decay_lr_rate = 0.0;
  double first_step_size = 2000;
  double second_step_size = 2000;
  std::int64_t first_stair_count = 0;  // 0: continuous; else held flat in that many stairs
  std::int64_t second_stair_count = 0;
  double decay_step_size = 0;  // 0: no decay after the cycle
};

// DeepSpeed's LRRangeTest: min_lr * (1 + step_rate * t / step_size), floored per interval
// when staircase.
struct RangeTestConfig {
  double min_lr = 1e-3;
  std::int64_t step_size = 2000;
  double step_rate = 1.0;
  bool staircase = false;
};

// The shape of warmup_stable_decay's warmup and decay (its warmup_type, decay_type).
enum class WsdShape { kLinear, kCosine, kOneMinusSqrt };

// transformers' schedule options, from --lr_scheduler_kwargs (train/args/lr_scheduler_kwargs.h), with
// transformers' defaults.
struct HfScheduleOptions {
  std::optional<double> num_cycles;      // cosine waves; default 0.5, cosine_with_restarts' 1
  double lr_end = 1e-7;                  // polynomial: the rate it decays to
  double power = 1.0;                    // polynomial
  std::optional<double> warmup_lr_rate;  // cosine_warmup_with_min_lr: the warmup's first factor
  // warmup_stable_decay: the phases after warmup (without num_stable_steps, the steps the
  // warmup and decay leave of the total), their shapes and the floor as a share of the peak.
  std::optional<std::int64_t> num_stable_steps;
  std::int64_t num_decay_steps = 0;
  WsdShape warmup_type = WsdShape::kLinear;
  WsdShape decay_type = WsdShape::kCosine;
  double min_lr_ratio = 0.0;
};

// torch's ReduceLROnPlateau arguments, with its defaults.
struct PlateauConfig {
  bool maximize = false;  // mode "max": a larger metric is better
  double factor = 0.1;
  std::int64_t patience = 10;
  double threshold = 1e-4;
  bool relative_threshold = true;  // threshold_mode "rel" (else "abs")
  std::int64_t cooldown = 0;
  double min_lr = 0.0;
  double eps = 1e-8;  // a reduction smaller than this is not applied
};

// ReduceLROnPlateau's state (its best, num_bad_epochs, cooldown_counter and last_epoch, here
// counted in evaluations) and the rate it holds: what a checkpoint keeps.
struct PlateauState {
  double best = 0.0;  // +inf (or -inf with maximize) before the first evaluation
  std::int64_t bad_evaluations = 0;
  std::int64_t cooldown_counter = 0;
  std::int64_t evaluations = 0;
  double lr = 0.0;
};

struct LrScheduleConfig {
  ScheduleKind kind = ScheduleKind::kLinear;
  double peak_lr = 5e-5;  // HF learning_rate; DeepSpeed warmup_max_lr, WarmupCosineLR's optimizer lr
  // DeepSpeed takes the optimizer's lr as peak_lr (WarmupCosineLR, and WarmupLR without
  // warmup_max_lr); the training plan fills it in.
  bool peak_lr_from_optimizer = false;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 0;
  double min_lr_rate = 0.0;  // cosine_with_min_lr, cosine_warmup_with_min_lr: floor as a share of peak_lr
  HfScheduleOptions hf;
  PlateauConfig plateau;
  double warmup_min_lr = 0.0;     // DeepSpeed WarmupLR / WarmupDecayLR
  bool warmup_log = true;         // DeepSpeed warmup_type "log" (else "linear")
  double warmup_min_ratio = 0.0;  // DeepSpeed WarmupCosineLR
  double cos_min_ratio = 1e-4;    // DeepSpeed WarmupCosineLR
  OneCycleConfig one_cycle;
  RangeTestConfig range_test;
};

// HF's scheduler names accepted by --lr_scheduler_type, for messages.
const std::vector<std::string>& hf_schedule_names();
// DeepSpeed's scheduler.type names zerotune runs, for messages.
const std::vector<std::string>& deepspeed_schedule_names();
// Parses an HF --lr_scheduler_type value; an unknown one is an error listing the accepted.
ScheduleKind hf_schedule_kind(const std::string& name);
// Parses a DeepSpeed scheduler.type; an unknown one is an error listing the accepted.
ScheduleKind deepspeed_schedule_kind(const std::string& type);

class LrSchedule {
 public:
  explicit LrSchedule(const LrScheduleConfig& config);
  // The learning rate of optimizer update `step` (0-based, counting applied updates).
  double rate(std::int64_t step) const;
  // An evaluation's metric (eval_loss), as HF's Trainer steps ReduceLROnPlateau with it after
  // each evaluation during training; nothing for the other schedules. Returns whether the
  // rate was reduced.
  bool observe_metric(double metric);

  bool on_plateau() const { return config_.kind == ScheduleKind::kReduceOnPlateau; }
  const PlateauState& plateau_state() const { return plateau_; }
  void restore_plateau_state(const PlateauState& state) { plateau_ = state; }

 private:
  double hf_factor(std::int64_t step) const;
  double cosine_factor(double progress) const;
  double polynomial_factor(std::int64_t step) const;
  double inverse_sqrt_factor(std::int64_t step) const;
  double cosine_warmup_with_min_lr_factor(std::int64_t step) const;
  double warmup_stable_decay_factor(std::int64_t step) const;
  bool plateau_improved(double metric) const;
  // DeepSpeed's get_lr() once last_batch_iteration is `last` (-1: as built).
  double deepspeed_rate(std::int64_t last) const;
  double deepspeed_warmup_gamma(std::int64_t last) const;
  double warmup_cosine_ratio(std::int64_t last) const;
  double one_cycle_rate(std::int64_t last) const;
  double range_test_rate(std::int64_t last) const;

  LrScheduleConfig config_;
  PlateauState plateau_;
};

}  // namespace zt::train
