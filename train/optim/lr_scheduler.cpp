#include "train/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "runtime/error.h"
#include "runtime/terminal/text_list.h"

namespace zt::train {
namespace {

bool is_deepspeed(ScheduleKind kind) {
  return kind == ScheduleKind::kWarmupLR || kind == ScheduleKind::kWarmupDecayLR ||
         kind == ScheduleKind::kWarmupCosineLR || kind == ScheduleKind::kOneCycle || kind == ScheduleKind::kLRRangeTest;
}

// transformers' SchedulerType values, in its order, each with its kind.
const std::vector<std::pair<std::string, ScheduleKind>>& hf_schedules() {
  static const std::vector<std::pair<std::string, ScheduleKind>> schedules = {
      {"linear", ScheduleKind::kLinear},
      {"cosine", ScheduleKind::kCosine},
      {"cosine_with_restarts", ScheduleKind::kCosineWithRestarts},
      {"polynomial", ScheduleKind::kPolynomial},
      {"constant", ScheduleKind::kConstant},
      {"constant_with_warmup", ScheduleKind::kConstantWithWarmup},
      {"inverse_sqrt", ScheduleKind::kInverseSqrt},
      {"reduce_lr_on_plateau", ScheduleKind::kReduceOnPlateau},
      {"cosine_with_min_lr", ScheduleKind::kCosineWithMinLr},
      {"cosine_warmup_with_min_lr", ScheduleKind::kCosineWarmupWithMinLr},
      {"warmup_stable_decay", ScheduleKind::kWarmupStableDecay},
  };
  return schedules;
}

}  // namespace

const std::vector<std::string>& hf_schedule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, kind] : hf_schedules()) out.push_back(name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& deepspeed_schedule_names() {
  static const std::vector<std::string> names = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle",
                                                 "LRRangeTest"};
  return names;
}

ScheduleKind hf_schedule_kind(const std::string& name) {
  for (const auto& [candidate, kind] : hf_schedules())
    if (candidate == name) return kind;
  zt::fail("--lr_scheduler_type '" + name + "' is not supported; accepted: " + join_list(hf_schedule_names()));
}

ScheduleKind deepspeed_schedule_kind(const std::string& type) {
  static const ScheduleKind kinds[] = {ScheduleKind::kWarmupLR, ScheduleKind::kWarmupDecayLR,
                                       ScheduleKind::kWarmupCosineLR, ScheduleKind::kOneCycle,
                                       ScheduleKind::kLRRangeTest};
  const auto& names = deepspeed_schedule_names();
  auto it = std::find(names.begin(), names.end(), type);
  ZT_REQUIRE(it != names.end(),
             "DeepSpeed config: scheduler.type '" + type + "' is not supported; accepted: " + join_list(names));
  return kinds[it - names.begin()];
}

LrSchedule::LrSchedule(const LrScheduleConfig& config) : config_(config) {
  ZT_REQUIRE(config.warmup_steps >= 0, "warmup steps must be >= 0, got " + std::to_string(config.warmup_steps));
  ZT_REQUIRE(config.min_lr_rate >= 0.0 && config.min_lr_rate <= 1.0,
             "cosine_with_min_lr: min_lr_rate must be in [0, 1], got " + std::to_string(config.min_lr_rate));
  ZT_REQUIRE(config.kind != ScheduleKind::kPolynomial || config.peak_lr > config.hf.lr_end,
             "polynomial: lr_end (" + std::to_string(config.hf.lr_end) + ") must be smaller than initial lr (" +
                 std::to_string(config.peak_lr) + ")");
  ZT_REQUIRE(config.plateau.factor < 1.0, "reduce_lr_on_plateau: factor should be < 1.0");
  // DeepSpeed warms up over at least two steps, so that log(warmup) is never zero.
  if (is_deepspeed(config_.kind)) config_.warmup_steps = std::max<std::int64_t>(2, config_.warmup_steps);
  plateau_.best = config_.plateau.maximize ? -HUGE_VAL : HUGE_VAL;
  plateau_.lr = config_.peak_lr;
}

double LrSchedule::rate(std::int64_t step) const {
  if (is_deepspeed(config_.kind)) return deepspeed_rate(step - 1);
  if (on_plateau()) return plateau_.lr;
  return config_.peak_lr * hf_factor(step);
}

// The share of the warmup done once `last` updates have been counted (last < warmup).
double LrSchedule::deepspeed_warmup_gamma(std::int64_t last) const {
  const double n = static_cast<double>(config_.warmup_steps);
  if (config_.warmup_log) return std::log(static_cast<double>(last + 1)) / std::log(n);
  return static_cast<double>(last) / n;
}

double LrSchedule::deepspeed_rate(std::int64_t last) const {
  const double range = config_.peak_lr - config_.warmup_min_lr;
  const std::int64_t warmup = config_.warmup_steps;
  switch (config_.kind) {
    case ScheduleKind::kWarmupLR:
      if (last < 0) return config_.warmup_min_lr;
      return config_.warmup_min_lr + range * (last < warmup ? deepspeed_warmup_gamma(last) : 1.0);
    case ScheduleKind::kWarmupDecayLR: {
      if (last < 0) return config_.warmup_min_lr;
      if (last < warmup) return config_.warmup_min_lr + range * deepspeed_warmup_gamma(last);
      const double decay = static_cast<double>(config_.total_steps - last) /
                           static_cast<double>(std::max<std::int64_t>(1, config_.total_steps - warmup));
      return config_.warmup_min_lr + range * std::max(0.0, decay);
    }
    case ScheduleKind::kWarmupCosineLR:
      return last < 0 ? 0.0 : config_.peak_lr * warmup_cosine_ratio(last);
    case ScheduleKind::kOneCycle:
      return one_cycle_rate(last);
    default:
      return range_test_rate(last);
  }
}

double LrSchedule::warmup_cosine_ratio(std::int64_t last) const {
  const std::int64_t warmup = config_.warmup_steps;
  if (last < warmup) return config_.warmup_min_ratio + deepspeed_warmup_gamma(last) * (1.0 - config_.warmup_min_ratio);
  const double span = static_cast<double>(std::max<std::int64_t>(1, config_.total_steps - warmup));
  // DeepSpeed holds the ratio at cos_min_ratio once the cosine is done.
  const double progress = std::min(1.0, static_cast<double>(last - warmup + 1) / span);
  const double cosine = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
  return std::max(0.0, config_.cos_min_ratio + (1.0 - config_.cos_min_ratio) * cosine);
}

double LrSchedule::one_cycle_rate(std::int64_t last) const {
  const OneCycleConfig& c = config_.one_cycle;
  const double total = c.first_step_size + c.second_step_size;
  if (static_cast<double>(last) >= total) {
    if (c.decay_step_size == 0.0 || c.decay_lr_rate == 0.0) return c.min_lr;
    const double intervals = static_cast<double>(last - total + 1) / c.decay_step_size;
    return c.min_lr / (1.0 + c.decay_lr_rate * intervals);
  }
  const double iteration = static_cast<double>(last + 1);
  const double step_ratio = c.first_step_size / total;
  // Written as DeepSpeed writes it, so the rates agree to the last bit.
  const double x = 1.0 + iteration / total - std::floor(1.0 + iteration / total);
  const bool rising = x <= step_ratio;
  double scale = rising ? x / step_ratio : (x - 1.0) / (step_ratio - 1.0);
  const std::int64_t stairs = rising ? c.first_stair_count : c.second_stair_count;
  if (stairs > 0) {
    // Stairs count from the whole update number, as DeepSpeed does, so a stair edge is exact.
    const double in_cycle = std::fmod(iteration, total);
    const double position = in_cycle <= c.first_step_size
                                ? in_cycle * static_cast<double>(stairs) / c.first_step_size
                                : (total - in_cycle) * static_cast<double>(stairs) / c.second_step_size;
    scale = std::floor(position) / static_cast<double>(stairs);
  }
  return c.min_lr + (c.max_lr - c.min_lr) * scale;
}

double LrSchedule::range_test_rate(std::int64_t last) const {
  const RangeTestConfig& c = config_.range_test;
  double interval = static_cast<double>(last + 1) / static_cast<double>(c.step_size);
  if (c.staircase) interval = std::floor(interval);
  return c.min_lr * (1.0 + c.step_rate * interval);
}

}  // namespace zt::train
