// Whole models through the tape on the CPU: they learn, checkpointing changes no gradient
// bit, every parameter's hook fires once per backward, and the block's gradients match
// finite differences end to end.
#include <gtest/gtest.h>

#include "runtime/generator.h"
#include "tests/common/gradcheck.h"
#include "tests/common/tiny_models.h"

namespace zt::testing {
namespace {

void expect_learns(const std::vector<double>& losses, const char* what) {
  ASSERT_EQ(losses.size(), 50u);
  for (double loss : losses) ASSERT_TRUE(std::isfinite(loss)) << what;
  EXPECT_LT(losses.back(), 0.25 * losses.front()) << what << ": from " << losses.front() << " to " << losses.back();
}

TEST(AutogradTraining, MlpLossFallsOver50Steps) {
  expect_learns(train(TinyMlp(DType::kF32, Device::cpu()), Device::cpu(), 50), "mlp");
}

TEST(AutogradTraining, TransformerBlockLossFallsOver50Steps) {
  expect_learns(train(TinyBlock(DType::kF32, Device::cpu()), Device::cpu(), 50), "block");
}

TEST(AutogradTraining, CheckpointedBlockGivesIdenticalGradients) {
  std::vector<std::vector<double>> plain = block_gradients(Device::cpu(), false),
                                   checkpointed = block_gradients(Device::cpu(), true);
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i], checkpointed[i]) << "parameter " << i;
}

TEST(AutogradTraining, EveryParameterHookFiresOncePerBackwardWithItsFinalGradient) {
  TinyBlock model(DType::kF32, Device::cpu());
  TokenBatch batch(Device::cpu());
  std::vector<int> calls(model.params.size());
  std::vector<std::vector<double>> seen(model.params.size());
  for (std::size_t i = 0; i < model.params.size(); ++i)
    model.params[i].add_grad_ready_hook([&, i](const Tensor& grad) {
      ++calls[i];
      seen[i] = grad.to_vector();
    });
  for (int round = 1; round <= 2; ++round) {
    model.loss(batch).backward();
    for (std::size_t i = 0; i < model.params.size(); ++i) {
      EXPECT_EQ(calls[i], round) << model.params[i].name();
      EXPECT_EQ(seen[i], model.params[i].grad().to_vector()) << model.params[i].name();
    }
  }
}

TEST(AutogradTraining, BlockGradientsMatchFiniteDifferences) {
  TinyBlock model(DType::kF64, Device::cpu());
  TokenBatch batch(Device::cpu(), {4, 1, 3});
  std::vector<Tensor> values;
  for (const autograd::Variable& p : model.params) values.push_back(p.data());
  auto loss_of = [&](const std::vector<Tensor>& in, bool record) {
    TinyBlock m = model;
    for (std::size_t i = 0; i < in.size(); ++i) m.params[i] = autograd::Variable(in[i], record, model.params[i].name());
    return std::make_pair(m, m.loss(batch));
  };
  auto forward = [&](const std::vector<Tensor>& in) { return loss_of(in, false).second.data(); };
  auto backward = [&](const std::vector<Tensor>& in, const Tensor& probe) {
    auto [m, loss] = loss_of(in, true);
    loss.backward(probe);
    std::vector<Tensor> grads;
    for (const autograd::Variable& p : m.params) grads.push_back(p.grad());
    return grads;
  };
  expect_gradients_match("transformer block", forward, backward, values, std::vector<bool>(values.size(), true));
}

}  // namespace
}  // namespace zt::testing
