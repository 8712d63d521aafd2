// AdamWStepCore's update schedule (the hook train/optim/update_ahead.h runs the update through)
// on the CPU: spans updated in runs of any order and size give the one-run update's masters,
// moments and weights bit for bit. The optimizer's
// update ahead of the forward does not apply to a CPU model: it says so and leaves the model
// without a gatherer.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "models/config/config_presets.h"
#include "models/init.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "train/optim/adamw_step_core.h"
#include "train/optim/optimizer.h"

namespace zt::train {
namespace {

using autograd::Variable;

// Five parameters, one without decay, their gradients set, one step from them.
struct Stepped {
  explicit Stepped(const AdamWStepCore::UpdateSchedule& schedule) {
    OwnedPartition owned;
    for (std::uint64_t i = 0; i < 5; ++i) {
      Variable v(testing::random_tensor({3 + static_cast<std::int64_t>(i), 4}, 10 + i, DType::kF32), true);
      weights.push_back(v);
      owned.spans.push_back({"p" + std::to_string(i), v.data().shape(), 0, owned.numel, v.data().numel(), i != 2, v});
      owned.initial.push_back(v.data().reshape({v.data().numel()}));
      owned.numel += v.data().numel();
    }
    OptimizerConfig config;
    config.weight_decay = 0.1;
    core = std::make_unique<AdamWStepCore>(config, std::move(owned), Device::cpu(), OffloadOptions{},
                                           std::vector<TrainableParameter>{});
    core->set_update_schedule(schedule);
    Tensor grads = core->grads();  // a handle: the copy writes the core's gradients
    grads.copy_from(testing::random_tensor({core->numel()}, 99, DType::kF32));
    for (std::int64_t step = 1; step <= 2; ++step)
      core->step({.lr = 1e-2, .loss_scale = 1.0, .max_grad_norm = 1.0, .step = step},
                 local_gradient_norm({core->grads()}), [](const Tensor&) {});
  }
  std::vector<std::vector<double>> state() const {
    std::vector<std::vector<double>> values;
    for (const StateSlice& s : core->held_state())
      for (const Tensor* t : {&s.master, &s.exp_avg, &s.exp_avg_sq}) values.push_back(t->to_vector());
    for (const Variable& w : weights) values.push_back(w.data().to_vector());
    return values;
  }
  std::vector<Variable> weights;
  std::unique_ptr<AdamWStepCore> core;
};

TEST(UpdateSchedule, RunsInAnyOrderGiveTheOneRunUpdate) {
  const Stepped whole(nullptr);
  int runs = 0;
  const Stepped in_runs([&](const AdamWStepCore::UpdateRun& update) {
    for (const std::vector<std::size_t>& run : {std::vector<std::size_t>{4}, {0, 3}, {2}, {1}}) {
      update(run);
      ++runs;
    }
  });
  EXPECT_EQ(runs, 8) << "four runs a step, two steps";
  EXPECT_EQ(in_runs.state(), whole.state());
}

TEST(UpdateSchedule, ACpuModelDoesNotUpdateAheadOfItsForward) {
  models::CausalLM model =
      models::init_model(models::parse_config(models::tiny_config_json(models::Architecture::kQwen2), "tiny"), 7, {});
  std::vector<TrainableParameter> parameters;
  for (const models::NamedParameter& p : model.named_parameters()) parameters.push_back({p.name, p.variable, true});
  Optimizer optimizer(parameters, OptimizerConfig());
  EXPECT_FALSE(optimizer.update_ahead_of_forward(model));
  EXPECT_EQ(model.parameter_gatherer(), nullptr);
}

}  // namespace
}  // namespace zt::train
