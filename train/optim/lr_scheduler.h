// Learning-rate schedules: the rate of each optimizer update, counted t = 0, 1, 2... over the
// updates applied (a skipped fp16 step does not advance it). HF Trainer's names from
// transformers' get_scheduler are torch LambdaLR factors of the peak rate, so update t trains
// at factor(t). DeepSpeed's `scheduler` block types follow DeepSpeed's lr_schedules.py and its
// engine's order: the scheduler sets the first rate when it is built (its get_lr with
// last_batch_iteration -1) and the engine steps it after every applied update, so update t
// trains at get_lr(t - 1). WarmupLR and WarmupDecayLR therefore train their first two
// updates at warmup_min_lr, and WarmupCosineLR its first at 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt::train {

enum class ScheduleKind {
  kLinear,              // HF "linear"
  kCosine,              // HF "cosine"
  kCosineWithMinLr,     // HF "cosine_with_min_lr"
  kConstant,            // HF "constant"
  kConstantWithWarmup,  // HF "constant_with_warmup"
  kWarmupLR,            // DeepSpeed "WarmupLR"
  kWarmupDecayLR,       // DeepSpeed "WarmupDecayLR"
  kWarmupCosineLR,      // DeepSpeed "WarmupCosineLR"
  kOneCycle,            // DeepSpeed "OneCycle" (learning rate only: momentum cycling is refused)
  kLRRangeTest,         // DeepSpeed "LRRangeTest"
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

struct LrScheduleConfig {
  ScheduleKind kind = ScheduleKind::kLinear;
  double peak_lr = 5e-5;  // HF learning_rate; DeepSpeed warmup_max_lr, WarmupCosineLR's optimizer lr
  // DeepSpeed takes the optimizer's lr as peak_lr (WarmupCosineLR, and WarmupLR without
  // warmup_max_lr); the training plan fills it in.
  bool peak_lr_from_optimizer = false;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 0;
  double min_lr_rate = 0.0;       // cosine_with_min_lr: floor as a share of peak_lr
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

 private:
  double hf_factor(std::int64_t step) const;
  // DeepSpeed's get_lr() once last_batch_iteration is `last` (-1: as built).
  double deepspeed_rate(std::int64_t last) const;
  double deepspeed_warmup_gamma(std::int64_t last) const;
  double warmup_cosine_ratio(std::int64_t last) const;
  double one_cycle_rate(std::int64_t last) const;
  double range_test_rate(std::int64_t last) const;

  LrScheduleConfig config_;
};

}  // namespace zt::train
