// transformers' schedules (optimization.py: each get_*_schedule's lr_lambda) and torch's
// ReduceLROnPlateau. Each factor is written as transformers writes it, operation for operation,
// so that the rates agree with HF's to the last bit: Python's int / int is a true division,
// and its float % keeps the divisor's sign.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "train/optim/lr_scheduler.h"

namespace zt::train {
namespace {

// Every HF schedule's linear warmup: float(step) / float(max(1, warmup)).
double warmup_fraction(std::int64_t step, std::int64_t warmup_steps) {
  return static_cast<double>(step) / static_cast<double>(std::max<std::int64_t>(1, warmup_steps));
}

// Python's a % b for floats: the result takes b's sign.
double python_mod(double a, double b) {
  const double r = std::fmod(a, b);
  return r != 0.0 && ((r < 0.0) != (b < 0.0)) ? r + b : r;
}

// warmup_stable_decay's warmup shape at `progress` in [0, 1).
double wsd_rise(WsdShape shape, double progress) {
  switch (shape) {
    case WsdShape::kLinear:
      return progress;
    case WsdShape::kCosine:
      return 0.5 * (1.0 - std::cos(std::numbers::pi * progress));
    default:
      return 1.0 - std::sqrt(1.0 - progress);
  }
}

}  // namespace

double LrSchedule::hf_factor(std::int64_t step) const {
  const std::int64_t warmup = config_.warmup_steps;
  switch (config_.kind) {
    case ScheduleKind::kConstant:
      return 1.0;
    case ScheduleKind::kInverseSqrt:
      return inverse_sqrt_factor(step);
    case ScheduleKind::kPolynomial:
      return polynomial_factor(step);
    case ScheduleKind::kCosineWarmupWithMinLr:
      return cosine_warmup_with_min_lr_factor(step);
    case ScheduleKind::kWarmupStableDecay:
      return warmup_stable_decay_factor(step);
    default:
      break;
  }
  if (step < warmup) return warmup_fraction(step, warmup);
  const double after = static_cast<double>(std::max<std::int64_t>(1, config_.total_steps - warmup));
  const double progress = static_cast<double>(step - warmup) / after;
  switch (config_.kind) {
    case ScheduleKind::kLinear:
      return std::max(0.0, static_cast<double>(config_.total_steps - step) / after);
    case ScheduleKind::kCosine:
      return std::max(0.0, cosine_factor(progress));
    case ScheduleKind::kCosineWithRestarts: {
      if (progress >= 1.0) return 0.0;
      const double cycles = config_.hf.num_cycles.value_or(1.0);
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * python_mod(cycles * progress, 1.0))));
    }
    case ScheduleKind::kCosineWithMinLr:
      return std::max(0.0, cosine_factor(progress) * (1.0 - config_.min_lr_rate) + config_.min_lr_rate);
    default:
      return 1.0;  // constant_with_warmup after its warmup
  }
}

// 0.5 * (1 + cos(pi * num_cycles * 2 * progress)): half a wave by default, from 1 down to 0.
double LrSchedule::cosine_factor(double progress) const {
  const double cycles = config_.hf.num_cycles.value_or(0.5);
  return 0.5 * (1.0 + std::cos(std::numbers::pi * cycles * 2.0 * progress));
}

// get_polynomial_decay_schedule_with_warmup: from the peak down to lr_end, held there after the
// last step; the factor is the rate over the peak, as LambdaLR multiplies it back.
double LrSchedule::polynomial_factor(std::int64_t step) const {
  const std::int64_t warmup = config_.warmup_steps, total = config_.total_steps;
  const double lr_init = config_.peak_lr, lr_end = config_.hf.lr_end;
  if (step < warmup) return warmup_fraction(step, warmup);
  // transformers divides by zero here (warmup == total); the rate it decays to is what is meant.
  if (step > total || total == warmup) return lr_end / lr_init;
  const double lr_range = lr_init - lr_end;
  const double pct_remaining = 1.0 - static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
  const double decay = lr_range * std::pow(pct_remaining, config_.hf.power) + lr_end;
  return decay / lr_init;
}

// get_inverse_sqrt_schedule as the Trainer builds it: its timescale is the warmup (10,000
// without one), since get_scheduler passes it no options.
double LrSchedule::inverse_sqrt_factor(std::int64_t step) const {
  const std::int64_t warmup = config_.warmup_steps;
  if (step < warmup) return warmup_fraction(step, warmup);
  const std::int64_t timescale = warmup != 0 ? warmup : 10'000;
  const std::int64_t shift = timescale - warmup;
  return 1.0 / std::sqrt(static_cast<double>(step + shift) / static_cast<double>(timescale));
}

// get_cosine_with_min_lr_schedule_with_warmup_lr_rate: a warmup that starts above zero (at
// warmup_lr_rate, or 1 / warmup) and a cosine counted from one step later.
double LrSchedule::cosine_warmup_with_min_lr_factor(std::int64_t step) const {
  const double current = static_cast<double>(step), warmup = static_cast<double>(config_.warmup_steps),
               total = static_cast<double>(config_.total_steps);
  if (current < warmup) {
    if (!config_.hf.warmup_lr_rate) return (current + 1.0) / std::max(1.0, warmup);
    const double start = *config_.hf.warmup_lr_rate;
    return start + (1.0 - start) * current / std::max(1.0, warmup - 1.0);
  }
  const double progress = (current - warmup + 1.0) / std::max(1.0, total - warmup);
  return std::max(0.0, cosine_factor(progress) * (1.0 - config_.min_lr_rate) + config_.min_lr_rate);
}

// get_wsd_schedule: warmup from min_lr_ratio up, the peak held for num_stable_steps, a decay
// over num_decay_steps back to min_lr_ratio, and min_lr_ratio from then on.
double LrSchedule::warmup_stable_decay_factor(std::int64_t step) const {
  const HfScheduleOptions& o = config_.hf;
  const std::int64_t warmup = config_.warmup_steps;
  const std::int64_t stable = o.num_stable_steps.value_or(config_.total_steps - warmup - o.num_decay_steps);
  const double floor = o.min_lr_ratio;
  if (step < warmup) {
    const double progress = warmup_fraction(step, warmup);
    return std::max(0.0, wsd_rise(o.warmup_type, progress) * (1.0 - floor) + floor);
  }
  if (step < warmup + stable) return 1.0;
  if (step < warmup + stable + o.num_decay_steps) {
    const double progress =
        static_cast<double>(step - warmup - stable) / static_cast<double>(std::max<std::int64_t>(1, o.num_decay_steps));
    double factor = 0.0;
    switch (o.decay_type) {
      case WsdShape::kLinear:
        factor = 1.0 - progress;
        break;
      case WsdShape::kCosine:
        factor = cosine_factor(progress);
        break;
      default:
        factor = 1.0 - std::sqrt(progress);
    }
    return std::max(0.0, factor * (1.0 - floor) + floor);
  }
  return floor;
}

// torch's ReduceLROnPlateau._is_better.
bool LrSchedule::plateau_improved(double metric) const {
  const PlateauConfig& c = config_.plateau;
  const double best = plateau_.best;
  if (!c.maximize) return c.relative_threshold ? metric < best * (1.0 - c.threshold) : metric < best - c.threshold;
  return c.relative_threshold ? metric > best * (c.threshold + 1.0) : metric > best + c.threshold;
}

// torch's ReduceLROnPlateau.step(metrics) and _reduce_lr, in its order.
bool LrSchedule::observe_metric(double metric) {
  if (!on_plateau()) return false;
  const PlateauConfig& c = config_.plateau;
  ++plateau_.evaluations;
  if (plateau_improved(metric)) {
    plateau_.best = metric;
    plateau_.bad_evaluations = 0;
  } else {
    ++plateau_.bad_evaluations;
  }
  if (plateau_.cooldown_counter > 0) {
    --plateau_.cooldown_counter;
    plateau_.bad_evaluations = 0;  // bad evaluations in the cooldown do not count
  }
  if (plateau_.bad_evaluations <= c.patience) return false;
  plateau_.cooldown_counter = c.cooldown;
  plateau_.bad_evaluations = 0;
  const double reduced = std::max(plateau_.lr * c.factor, c.min_lr);
  if (!(plateau_.lr - reduced > c.eps)) return false;
  plateau_.lr = reduced;
  return true;
}

}  // namespace zt::train
