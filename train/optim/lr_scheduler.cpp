#include "train/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/error.h"

namespace zt::train {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

const std::vector<std::string>& deepspeed_schedule_names() {
  static const std::vector<std::string> names = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
  return names;
}

double warmup_fraction(std::int64_t step, std::int64_t warmup_steps) {
  return static_cast<double>(step) / static_cast<double>(std::max<std::int64_t>(1, warmup_steps));
}

}  // namespace

const std::vector<std::string>& hf_schedule_names() {
  static const std::vector<std::string> names = {"linear", "cosine", "cosine_with_min_lr", "constant",
                                                 "constant_with_warmup"};
  return names;
}

ScheduleKind hf_schedule_kind(const std::string& name) {
  static const ScheduleKind kinds[] = {ScheduleKind::kLinear, ScheduleKind::kCosine, ScheduleKind::kCosineWithMinLr,
                                       ScheduleKind::kConstant, ScheduleKind::kConstantWithWarmup};
  const auto& names = hf_schedule_names();
  auto it = std::find(names.begin(), names.end(), name);
  ZT_REQUIRE(it != names.end(), "--lr_scheduler_type '" + name + "' is not supported; accepted: " + joined(names));
  return kinds[it - names.begin()];
}

ScheduleKind deepspeed_schedule_kind(const std::string& type) {
  static const ScheduleKind kinds[] = {ScheduleKind::kWarmupLR, ScheduleKind::kWarmupDecayLR,
                                       ScheduleKind::kWarmupCosineLR};
  const auto& names = deepspeed_schedule_names();
  auto it = std::find(names.begin(), names.end(), type);
  ZT_REQUIRE(it != names.end(),
             "DeepSpeed config: scheduler.type '" + type + "' is not supported; accepted: " + joined(names));
  return kinds[it - names.begin()];
}

LrSchedule::LrSchedule(const LrScheduleConfig& config) : config_(config) {
  ZT_REQUIRE(config.warmup_steps >= 0, "warmup steps must be >= 0, got " + std::to_string(config.warmup_steps));
  ZT_REQUIRE(config.min_lr_rate >= 0.0 && config.min_lr_rate <= 1.0,
             "cosine_with_min_lr: min_lr_rate must be in [0, 1], got " + std::to_string(config.min_lr_rate));
  // DeepSpeed clamps its warmup to at least two steps so log(warmup) is never zero.
  if (config_.kind == ScheduleKind::kWarmupLR || config_.kind == ScheduleKind::kWarmupDecayLR ||
      config_.kind == ScheduleKind::kWarmupCosineLR)
    config_.warmup_steps = std::max<std::int64_t>(2, config_.warmup_steps);
}

double LrSchedule::hf_factor(std::int64_t step) const {
  const std::int64_t warmup = config_.warmup_steps;
  if (config_.kind == ScheduleKind::kConstant) return 1.0;
  if (step < warmup) return warmup_fraction(step, warmup);
  const double after = static_cast<double>(std::max<std::int64_t>(1, config_.total_steps - warmup));
  const double progress = static_cast<double>(step - warmup) / after;
  switch (config_.kind) {
    case ScheduleKind::kLinear:
      return std::max(0.0, static_cast<double>(config_.total_steps - step) / after);
    case ScheduleKind::kCosine:
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
    case ScheduleKind::kCosineWithMinLr: {
      const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
      return std::max(0.0, cosine * (1.0 - config_.min_lr_rate) + config_.min_lr_rate);
    }
    default:
      return 1.0;  // constant_with_warmup after its warmup
  }
}

double LrSchedule::deepspeed_warmup_gamma(std::int64_t step) const {
  const double n = static_cast<double>(config_.warmup_steps);
  if (config_.warmup_log) return std::log(static_cast<double>(step + 1)) / std::log(n);
  return static_cast<double>(step) / n;
}

double LrSchedule::rate(std::int64_t step) const {
  const double range = config_.peak_lr - config_.warmup_min_lr;
  const std::int64_t warmup = config_.warmup_steps;
  switch (config_.kind) {
    case ScheduleKind::kWarmupLR:
      return config_.warmup_min_lr + range * (step < warmup ? deepspeed_warmup_gamma(step) : 1.0);
    case ScheduleKind::kWarmupDecayLR: {
      if (step < warmup) return config_.warmup_min_lr + range * deepspeed_warmup_gamma(step);
      const double decay = static_cast<double>(config_.total_steps - step) /
                           static_cast<double>(std::max<std::int64_t>(1, config_.total_steps - warmup));
      return config_.warmup_min_lr + range * std::max(0.0, decay);
    }
    case ScheduleKind::kWarmupCosineLR: {
      if (step < warmup)
        return config_.peak_lr *
               (config_.warmup_min_ratio + deepspeed_warmup_gamma(step) * (1.0 - config_.warmup_min_ratio));
      const double span = static_cast<double>(std::max<std::int64_t>(1, config_.total_steps - warmup));
      const double cosine = (1.0 + std::cos(std::numbers::pi * static_cast<double>(step - warmup + 1) / span)) / 2.0;
      return config_.peak_lr * std::max(0.0, config_.cos_min_ratio + (1.0 - config_.cos_min_ratio) * cosine);
    }
    default:
      return config_.peak_lr * hf_factor(step);
  }
}

}  // namespace zt::train
