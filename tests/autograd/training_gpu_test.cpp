// The tape on the GPU: the tiny models follow the CPU's loss curve, the block's gradients
// match the CPU's, checkpointing changes no gradient bit, the MLP's SwiGLU + down projection
// op equals its two ops bit for bit, and mixing devices is refused.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

namespace zt::testing {
namespace {

class AutogradGpu : public PoisonedGpuTest {};

// Steps of float32 Adam on two devices drift apart only by rounding, which grows as the
// loss approaches zero; the bound is relative with a small absolute floor.
void expect_follows(const std::vector<double>& gpu, const std::vector<double>& cpu, const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  EXPECT_NEAR(gpu[0], cpu[0], 1e-5 * cpu[0]) << what << ": the first loss";
  for (std::size_t s = 0; s < cpu.size(); ++s) {
    ASSERT_TRUE(std::isfinite(gpu[s])) << what << " step " << s;
    EXPECT_NEAR(gpu[s], cpu[s], 2e-2 * cpu[s] + 1e-3) << what << " step " << s;
  }
  EXPECT_LT(gpu.back(), 0.25 * gpu.front()) << what;
}

TEST_F(AutogradGpu, MlpFollowsTheCpuLossCurve) {
  ZT_SKIP_WITHOUT_GPU();
  expect_follows(train(TinyMlp(DType::kF32, Device::cuda()), Device::cuda(), 50),
                 train(TinyMlp(DType::kF32, Device::cpu()), Device::cpu(), 50), "mlp");
}

TEST_F(AutogradGpu, TransformerBlockFollowsTheCpuLossCurve) {
  ZT_SKIP_WITHOUT_GPU();
  expect_follows(train(TinyBlock(DType::kF32, Device::cuda()), Device::cuda(), 50),
                 train(TinyBlock(DType::kF32, Device::cpu()), Device::cpu(), 50), "block");
}

TEST_F(AutogradGpu, BlockGradientsMatchTheCpu) {
  ZT_SKIP_WITHOUT_GPU();
  std::vector<std::vector<double>> gpu = block_gradients(Device::cuda(), false);
  std::vector<std::vector<double>> cpu = block_gradients(Device::cpu(), false);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    Tensor g = Tensor::from_values(gpu[i], {static_cast<std::int64_t>(gpu[i].size())}, DType::kF64);
    Tensor c = Tensor::from_values(cpu[i], {static_cast<std::int64_t>(cpu[i].size())}, DType::kF64);
    expect_no_nan(g, "parameter " + std::to_string(i));
    EXPECT_LE(relative_error(g, c), 1e-4) << "parameter " << i;
  }
}

TEST_F(AutogradGpu, CheckpointedBlockGivesIdenticalGradients) {
  ZT_SKIP_WITHOUT_GPU();
  std::vector<std::vector<double>> plain = block_gradients(Device::cuda(), false);
  std::vector<std::vector<double>> checkpointed = block_gradients(Device::cuda(), true);
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i], checkpointed[i]) << "parameter " << i;
}

TEST_F(AutogradGpu, Bf16BlockStartsWhereTheCpuDoes) {
  ZT_SKIP_WITHOUT_GPU();
  TinyBlock gpu_model(DType::kBF16, Device::cuda()), cpu_model(DType::kBF16, Device::cpu());
  double gpu = gpu_model.loss(TokenBatch(Device::cuda())).data().item();
  double cpu = cpu_model.loss(TokenBatch(Device::cpu())).data().item();
  EXPECT_NEAR(gpu, cpu, 1e-2 * cpu);
}

// autograd::swiglu_linear on the GPU in bf16 (the activation written again by the SwiGLU's
// backward kernel, the weight gradient into an fp32 sink) against swiglu_fused then linear:
// the output, gate_up's gradient and the sink bit for bit, at a width that takes the vector
// path and one that cannot.
TEST_F(AutogradGpu, SwigluLinearIsItsTwoOpsBitForBit) {
  ZT_SKIP_WITHOUT_GPU();
  for (std::int64_t ffn : {96, 37}) {
    SCOPED_TRACE("ffn " + std::to_string(ffn));
    const Tensor gate_up = random_tensor({300, 2 * ffn}, 3, DType::kBF16).to(Device::cuda());
    const Tensor weight = random_tensor({64, ffn}, 4, DType::kBF16).to(Device::cuda());
    const Tensor bias = random_tensor({64}, 5, DType::kBF16).to(Device::cuda());
    const Tensor probe = random_tensor({300, 64}, 6, DType::kBF16).to(Device::cuda());
    std::vector<Tensor> outputs, gate_up_grads, sinks, bias_grads;
    for (bool fused : {true, false}) {
      autograd::Variable x(gate_up.clone(), true, "gate_up"), w(weight.clone(), true, "down"),
          b(bias.clone(), true, "bias");
      const Tensor sink = Tensor::zeros({64, ffn}, DType::kF32, Device::cuda());
      w.set_grad_sink(sink);
      autograd::Variable y =
          fused ? autograd::swiglu_linear(x, w, b) : autograd::linear(autograd::swiglu_fused(x), w, b);
      y.backward(probe);
      outputs.push_back(y.data());
      gate_up_grads.push_back(x.grad());
      sinks.push_back(sink);
      bias_grads.push_back(b.grad());
      w.set_grad_sink(Tensor());
    }
    EXPECT_EQ(outputs[0].to_vector(), outputs[1].to_vector());
    EXPECT_EQ(gate_up_grads[0].to_vector(), gate_up_grads[1].to_vector());
    EXPECT_EQ(sinks[0].to_vector(), sinks[1].to_vector());
    EXPECT_EQ(bias_grads[0].to_vector(), bias_grads[1].to_vector());
    expect_no_nan(sinks[0], "the down weight's sink");
  }
}

TEST_F(AutogradGpu, MixingDevicesNamesBoth) {
  ZT_SKIP_WITHOUT_GPU();
  autograd::Variable x(random_tensor({3, 4}, 1, DType::kF32).to(Device::cuda()), true, "x");
  autograd::Variable w(random_tensor({2, 4}, 2, DType::kF32), true, "w");
  expect_mentions(error_of([&] { autograd::linear(x, w); }), {"linear", "cuda", "cpu"});
}

}  // namespace
}  // namespace zt::testing
