// The trainer's optimizer: gradients accumulated in fp32 by hooks across micro-batches,
// the update equal to AdamW on the accumulated gradient with DeepSpeed's clip divisor,
// non-finite steps skipped, HF's no-decay group, and state that round-trips by name.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "autograd/functions.h"
#include "ops/elementwise/accumulate.h"
#include "ops/optim/adamw.h"
#include "tests/common/op_test_util.h"
#include "train/optim/optimizer.h"

namespace zt::train {
namespace {

using autograd::Variable;

struct Problem {
  Variable weight{testing::random_tensor({3, 4}, 1, DType::kF32), true, "layer.weight"};
  Variable bias{testing::random_tensor({3}, 2, DType::kF32), true, "layer.bias"};
  Tensor x = testing::random_tensor({5, 4}, 3, DType::kF32);

  std::vector<TrainableParameter> parameters() {
    return {{"layer.weight", weight, decays("layer.weight", weight.data())},
            {"layer.bias", bias, decays("layer.bias", bias.data())}};
  }
  // Backward of sum(linear(x)²) * factor.
  void backward(double factor) {
    Variable y = autograd::linear(Variable(x), weight, bias);
    autograd::scale(autograd::sum(autograd::mul(y, y)), factor).backward();
  }
};

TEST(Optimizer, HooksAccumulateFp32GradientsAndDropTheLeafGradient) {
  Problem p;
  Optimizer optimizer(p.parameters(), OptimizerConfig{});
  p.backward(1.0);
  EXPECT_FALSE(p.weight.grad().defined());
  Tensor once = optimizer.gradient(0).to(DType::kF64);
  p.backward(2.0);
  std::vector<double> a = once.to_vector(), b = optimizer.gradient(0).to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], 3.0 * a[i], 1e-4 * std::abs(a[i]) + 1e-6);
  optimizer.zero_grad();
  for (double v : optimizer.gradient(0).to_vector()) EXPECT_EQ(v, 0.0);
}

TEST(Optimizer, StepIsAdamWOnTheUnscaledClippedGradient) {
  Problem p;
  Tensor w0 = p.weight.data().to(DType::kF32);
  OptimizerConfig config;
  config.weight_decay = 0.1;
  Optimizer optimizer(p.parameters(), config);
  const double loss_scale = 8.0, clip = 0.5;
  p.backward(loss_scale);
  Tensor grad = optimizer.gradient(0).to(DType::kF32);
  StepResult result = optimizer.step(1e-2, loss_scale, clip, 1);
  ASSERT_FALSE(result.skipped);
  EXPECT_GT(result.grad_norm, clip);  // the test must exercise clipping

  // The same update by hand: AdamW with grad_scale = loss_scale * (norm + 1e-6) / clip.
  Tensor master = w0.to(DType::kF32), m = Tensor::zeros({3, 4}, DType::kF32, Device::cpu()),
         v = Tensor::zeros({3, 4}, DType::kF32, Device::cpu());
  ops::AdamWConfig expected{.lr = 1e-2,
                            .hyperparameters = {.weight_decay = 0.1},
                            .step = 1,
                            .grad_scale = loss_scale * (result.grad_norm + 1e-6) / clip};
  ops::adamw_step(master, m, v, grad, expected);
  EXPECT_EQ(p.weight.data().to_vector(), master.to_vector());
}

TEST(Optimizer, BiasesAndNormsGetNoWeightDecay) {
  EXPECT_TRUE(decays("model.layers.0.mlp.up_proj.weight", Tensor::zeros({2, 2}, DType::kF32, Device::cpu())));
  EXPECT_FALSE(decays("model.layers.0.self_attn.q_proj.bias", Tensor::zeros({2}, DType::kF32, Device::cpu())));
  EXPECT_FALSE(decays("model.norm.weight", Tensor::zeros({2}, DType::kF32, Device::cpu())));
  // With a zero gradient only decay moves a parameter: the bias must stay put.
  Problem p;
  OptimizerConfig config;
  config.weight_decay = 0.5;
  Optimizer optimizer(p.parameters(), config);
  std::vector<double> bias0 = p.bias.data().to_vector(), weight0 = p.weight.data().to_vector();
  optimizer.step(0.1, 1.0, 0.0, 1);
  EXPECT_EQ(p.bias.data().to_vector(), bias0);
  EXPECT_NE(p.weight.data().to_vector(), weight0);
}

TEST(Optimizer, NonFiniteGradientSkipsTheWholeStep) {
  Problem p;
  Optimizer optimizer(p.parameters(), OptimizerConfig{});
  p.backward(1.0);
  Tensor inf = Tensor::full({3}, std::numeric_limits<double>::infinity(), DType::kF32);
  ops::accumulate_(optimizer.gradient(1), inf);
  std::vector<double> weight0 = p.weight.data().to_vector();
  StepResult result = optimizer.step(0.1, 1.0, 1.0, 1);
  EXPECT_TRUE(result.skipped);
  EXPECT_FALSE(std::isfinite(result.grad_norm));
  EXPECT_EQ(p.weight.data().to_vector(), weight0);
}

TEST(Optimizer, StateRoundTripsByNameAndRejectsAnotherModel) {
  Problem p;
  Optimizer optimizer(p.parameters(), OptimizerConfig{});
  p.backward(1.0);
  optimizer.step(1e-2, 1.0, 1.0, 1);
  auto state = optimizer.state_dict();
  EXPECT_EQ(state.size(), 6u);

  Problem q;
  Optimizer resumed(q.parameters(), OptimizerConfig{});
  resumed.load_state_dict(state);
  EXPECT_EQ(q.weight.data().to_vector(), p.weight.data().to_vector());
  for (Optimizer* o : {&optimizer, &resumed}) {
    o->zero_grad();
  }
  p.backward(1.0);
  q.backward(1.0);
  optimizer.step(1e-2, 1.0, 1.0, 2);
  resumed.step(1e-2, 1.0, 1.0, 2);
  EXPECT_EQ(q.weight.data().to_vector(), p.weight.data().to_vector());

  state.erase("layer.bias.exp_avg");
  std::string msg = testing::error_of([&] { resumed.load_state_dict(state); });
  EXPECT_NE(msg.find("layer.bias.exp_avg"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train
