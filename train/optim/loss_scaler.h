// fp16 dynamic loss scaling with DeepSpeed's exact semantics (runtime/fp16/loss_scaler.py):
// the loss is multiplied by scale() before backward; after each step update() is told
// whether any gradient overflowed. An overflow skips the step and, once hysteresis is used
// up, halves the scale; `loss_scale_window` clean steps since the last overflow double it.
// A static scale (loss_scale > 0) never moves. bf16 and fp32 training use no scaler.
#pragma once

#include <cstdint>
#include <string>

namespace zt::train {

struct LossScalerConfig {
  double static_scale = 0.0;  // DeepSpeed's loss_scale: 0 means dynamic
  int initial_scale_power = 16;
  std::int64_t loss_scale_window = 1000;
  int hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
};

// The state a checkpoint stores and a resume restores.
struct LossScalerState {
  double scale = 65536.0;
  int current_hysteresis = 2;
  std::int64_t iteration = 0;
  std::int64_t last_overflow_iteration = -1;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& config);

  double scale() const { return state_.scale; }
  bool is_dynamic() const { return config_.static_scale <= 0.0; }

  // Records one optimizer step's outcome. Throws zt::Error when an overflow arrives with
  // the scale already at its minimum: training cannot make progress in fp16 any more.
  void update(bool overflow);

  const LossScalerState& state() const { return state_; }
  void restore(const LossScalerState& state) { state_ = state; }

 private:
  LossScalerConfig config_;
  LossScalerState state_;
};

}  // namespace zt::train
