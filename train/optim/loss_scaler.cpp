#include "train/optim/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"

namespace zt::train {

LossScaler::LossScaler(const LossScalerConfig& config) : config_(config) {
  ZT_REQUIRE(config.static_scale >= 0.0,
             "fp16.loss_scale must be >= 0 (0 selects dynamic scaling), got " + std::to_string(config.static_scale));
  ZT_REQUIRE(config.loss_scale_window > 0,
             "fp16.loss_scale_window must be > 0, got " + std::to_string(config.loss_scale_window));
  ZT_REQUIRE(config.hysteresis >= 1, "fp16.hysteresis must be >= 1, got " + std::to_string(config.hysteresis));
  ZT_REQUIRE(config.min_loss_scale > 0.0,
             "fp16.min_loss_scale must be > 0, got " + std::to_string(config.min_loss_scale));
  state_.scale = is_dynamic() ? std::ldexp(1.0, config.initial_scale_power) : config.static_scale;
  state_.current_hysteresis = config.hysteresis;
}

void LossScaler::update(bool overflow) {
  if (!is_dynamic()) {
    ++state_.iteration;
    return;
  }
  if (overflow) {
    if (config_.hysteresis == 1 || state_.current_hysteresis == 1) {
      ZT_REQUIRE(state_.scale > config_.min_loss_scale,
                 "fp16 loss scale is already at its minimum (" + std::to_string(config_.min_loss_scale) +
                     ") and the gradients still overflow: the run cannot continue in fp16. Train in bf16 "
                     "(--bf16) if the GPU supports it, or lower the learning rate.");
      state_.scale = std::max(state_.scale / 2.0, config_.min_loss_scale);
    } else {
      --state_.current_hysteresis;
    }
    state_.last_overflow_iteration = state_.iteration;
  } else {
    if (config_.consecutive_hysteresis) state_.current_hysteresis = config_.hysteresis;
    if ((state_.iteration - state_.last_overflow_iteration) % config_.loss_scale_window == 0) {
      if (!config_.consecutive_hysteresis) state_.current_hysteresis = config_.hysteresis;
      state_.scale *= 2.0;
    }
  }
  ++state_.iteration;
}

}  // namespace zt::train
