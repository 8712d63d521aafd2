// One AdamW step on one parameter, with torch's / DeepSpeed's math in float32:
//   g = grad / grad_scale
//   p = p * (1 - lr * weight_decay)
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g²
//   p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// The scalars (bias corrections, step size) are computed in double on the host, as
// torch's Python floats are.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/optim/adamw_hyperparameters.h"
#include "tensor/tensor.h"

namespace zt::ops {

struct AdamWConfig {
  double lr = 1e-3;  // this step's rate (in training, the schedule's)
  AdamWHyperparameters hyperparameters{};
  std::int64_t step = 1;    // this step's 1-based count, for the bias corrections
  double grad_scale = 1.0;  // the loss scale times any clip divisor; the gradient is divided by it
  // The caller has seen that every gradient is finite (their L2 norm is): the step skips its
  // own pass over them, a read of every gradient.
  bool gradients_known_finite = false;
};

// Updates master, exp_avg and exp_avg_sq (float32, contiguous, one shape) in place from grad
// (float32, bfloat16 or float16, master's shape), and writes the new master rounded into
// working (a contiguous bfloat16/float16/float32 copy of the parameter) when it is defined.
// Returns a bool 0-dim tensor on master's device: true when grad held an inf or NaN, in which
// case nothing was modified (fp16 training skips the step). On the GPU nothing waits for the
// device: the flag is read by the update kernel itself.
Tensor adamw_step(const Tensor& master, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad,
                  const AdamWConfig& config, const Tensor& working = Tensor());

// One parameter of adamw_step_multi, with adamw_step's requirements on each tensor.
struct AdamWParam {
  Tensor master, exp_avg, exp_avg_sq, grad;
  Tensor working;                      // may be undefined
  std::optional<double> weight_decay;  // instead of config.hyperparameters.weight_decay (HF: 0 for biases and norms)
};

// adamw_step over every parameter at once, bit for bit as adamw_step on each, in a few
// launches on the GPU (the parameters may differ in shape, size — empty ones too — and
// gradient / working dtypes). All on one device. The returned flag (a bool 0-dim tensor on
// that device; CPU for no parameters) is true when any gradient held an inf or NaN, in
// which case no parameter was modified. On the GPU nothing waits for the device.
Tensor adamw_step_multi(const std::vector<AdamWParam>& params, const AdamWConfig& config);

}  // namespace zt::ops
