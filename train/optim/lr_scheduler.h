// Learning-rate schedules as a factor of the peak learning rate at optimizer step t
// (t = 0 for the first update, as torch's LambdaLR counts): HF Trainer's names from
// transformers' get_scheduler, and DeepSpeed's `scheduler` block types with DeepSpeed's
// formulas. DeepSpeed's WarmupLR/WarmupDecayLR give absolute rates (warmup_min_lr ..
// warmup_max_lr); they are expressed here as the rate itself, see LrSchedule::rate.
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
};

struct LrScheduleConfig {
  ScheduleKind kind = ScheduleKind::kLinear;
  double peak_lr = 5e-5;  // HF learning_rate; DeepSpeed warmup_max_lr
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 0;
  double min_lr_rate = 0.0;       // cosine_with_min_lr: floor as a share of peak_lr
  double warmup_min_lr = 0.0;     // DeepSpeed WarmupLR / WarmupDecayLR
  bool warmup_log = true;         // DeepSpeed warmup_type "log" (else "linear")
  double warmup_min_ratio = 0.0;  // DeepSpeed WarmupCosineLR
  double cos_min_ratio = 1e-4;    // DeepSpeed WarmupCosineLR
};

// HF's scheduler names accepted by --lr_scheduler_type, for messages.
const std::vector<std::string>& hf_schedule_names();
// Parses an HF --lr_scheduler_type value; an unknown one is an error listing the accepted.
ScheduleKind hf_schedule_kind(const std::string& name);
// Parses a DeepSpeed scheduler.type; an unknown one is an error listing the accepted.
ScheduleKind deepspeed_schedule_kind(const std::string& type);

class LrSchedule {
 public:
  explicit LrSchedule(const LrScheduleConfig& config);
  // The learning rate of optimizer step `step` (0-based).
  double rate(std::int64_t step) const;

 private:
  double hf_factor(std::int64_t step) const;
  double deepspeed_warmup_gamma(std::int64_t step) const;

  LrScheduleConfig config_;
};

}  // namespace zt::train
