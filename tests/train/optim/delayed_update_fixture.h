// What the delayed update's tests share (delayed_update_test.cpp on the CPU,
// delayed_update_gpu_test.cpp): a model whose gradients do not depend on its weights, so that
// a delayed and an immediate run see the same gradients, and the check that the delayed run's
// weights are the immediate run's one step late until settle().
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/functions.h"
#include "tests/common/op_test_util.h"
#include "train/optim/optimizer.h"

namespace zt::train::testing_delayed {

using autograd::Variable;
using Values = std::vector<std::vector<double>>;

// loss = sum(w * a) + sum(s * c): its gradients are a and c whatever the weights are.
struct LinearModel {
  explicit LinearModel(Device device = Device::cpu())
      : weight(testing::random_tensor({3, 5}, 1, DType::kF32).to(device), true, "w"),
        scale(testing::random_tensor({7}, 3, DType::kF32).to(device), true, "s") {}
  Variable weight, scale;
  std::vector<TrainableParameter> parameters() { return {{"w", weight, true}, {"s", scale, false}}; }
  void backward(int rank, int micro) {
    const std::uint64_t seed = 100 + 10 * static_cast<std::uint64_t>(rank) + static_cast<std::uint64_t>(micro);
    const Device device = weight.data().device();
    Variable a(testing::random_tensor({3, 5}, seed, DType::kF32).to(device)),
        c(testing::random_tensor({7}, seed + 1, DType::kF32).to(device));
    autograd::add(autograd::sum(autograd::mul(weight, a)), autograd::sum(autograd::mul(scale, c))).backward();
  }
  Values values() const { return {weight.data().to_vector(), scale.data().to_vector()}; }
};

inline OptimizerConfig decaying() {
  OptimizerConfig c;
  c.weight_decay = 0.1;
  return c;
}

inline OffloadOptions offload(bool delayed) {
  return {.enabled = true,
          .tile_numel = 4,
          .threads = 2,
          .gradients = GradientPlacement::kDevice,
          .delayed_update = delayed};
}

constexpr int kSteps = 4, kMicro = 2;

// Each step's weights after the step, and after the last step's settle().
struct Trajectory {
  std::vector<Values> after_step;
  Values settled;
};

template <typename Engine>
inline Trajectory run(Engine& optimizer, LinearModel& model, int rank) {
  Trajectory t;
  for (int step = 1; step <= kSteps; ++step) {
    for (int micro = 0; micro < kMicro; ++micro) model.backward(rank, micro + step * 10);
    EXPECT_FALSE(optimizer.step(1e-1, 1.0, 0.5, step).skipped);  // the clip acts: the norm is above 0.5
    optimizer.zero_grad();
    t.after_step.push_back(model.values());
  }
  optimizer.settle();
  t.settled = model.values();
  return t;
}

inline void expect_delayed(const Trajectory& delayed, const Trajectory& immediate, const Values& initial,
                           const std::string& what) {
  for (int step = 0; step < kSteps; ++step)
    EXPECT_EQ(delayed.after_step[step], step == 0 ? initial : immediate.after_step[step - 1])
        << what << ": after step " << step + 1 << " the weights are those of the step before";
  EXPECT_EQ(delayed.settled, immediate.after_step.back()) << what << ": settle() lands the last update";
  EXPECT_EQ(immediate.settled, immediate.after_step.back()) << what << ": nothing to land without the delay";
}

}  // namespace zt::train::testing_delayed
