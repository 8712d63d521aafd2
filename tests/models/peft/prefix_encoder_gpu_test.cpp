// P-Tuning v2 on the GPU against the same model on the CPU: the fixtures of
// tests/data/models with a prefix encoder of fixed weights give the CPU's logits and prefix
// gradients in float32 (the prefix through the GPU attention kernels' prefix path), with and
// without activation checkpointing, and cached generation continues as on the CPU.
#include <gtest/gtest.h>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "models/peft/prefix_encoder.h"
#include "models/reference/generate.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/test_util.h"

namespace zt::models {
namespace {

using autograd::Variable;

struct Outcome {
  Tensor logits;
  std::vector<Tensor> grads;  // the encoder's, on the CPU
};

Tensor ids(const std::vector<double>& values, DType dtype, Device device) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype).to(device);
}

// Two sequences (5 and 3 tokens) after a prefix of 4 with the projection; dropout off so the
// CPU and GPU runs compute the same function.
Outcome run(const std::string& arch, Device device, bool checkpointing) {
  CausalLM model = load_model(testing::fixture_dir(arch),
                              {.device = device, .dtype = DType::kF32, .gradient_checkpointing = checkpointing});
  for (const Variable& p : model.parameters()) p.set_requires_grad(false);
  auto encoder = std::make_shared<PrefixEncoder>(
      model.config(), PrefixConfig{.pre_seq_len = 4, .prefix_projection = true, .dropout = 0.0}, device, DType::kF32);
  Generator generator(3);
  encoder->init_weights(generator);
  attach_prefix_encoder(model, encoder);
  Variable logits =
      model.forward(ids({5, 9, 2, 4, 13, 8, 1, 6}, DType::kI64, device),
                    ids({0, 1, 2, 3, 4, 0, 1, 2}, DType::kI64, device), ids({0, 5, 8}, DType::kI32, device));
  Tensor probe = Tensor::normal(logits.data().shape(), 7, 0, 0.0, 1.0, DType::kF32).to(device);
  autograd::sum(autograd::mul(logits, Variable(probe))).backward();
  Outcome result{logits.data().to(Device::cpu()), {}};
  for (const auto& p : encoder->named_parameters()) result.grads.push_back(p.variable.grad().to(Device::cpu()));
  return result;
}

class PtuningGpu : public ::testing::TestWithParam<const char*> {};

TEST_P(PtuningGpu, LogitsAndPrefixGradientsMatchTheCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const Outcome cpu = run(GetParam(), Device::cpu(), false);
  for (bool checkpointing : {false, true}) {
    const Outcome gpu = run(GetParam(), Device::cuda(), checkpointing);
    EXPECT_LE(relative_error(gpu.logits, cpu.logits), 1e-4) << "logits, checkpointing " << checkpointing;
    for (std::size_t k = 0; k < cpu.grads.size(); ++k)
      EXPECT_LE(relative_error(gpu.grads[k], cpu.grads[k]), 1e-3)
          << "gradient " << k << ", checkpointing " << checkpointing;
  }
}

TEST_P(PtuningGpu, GenerationWithThePrefixMatchesTheCpu) {
  ZT_SKIP_WITHOUT_GPU();
  auto tokens = [&](Device device) {
    CausalLM model = load_model(testing::fixture_dir(GetParam()), {.device = device, .dtype = DType::kF32});
    auto encoder = std::make_shared<PrefixEncoder>(model.config(), PrefixConfig{.pre_seq_len = 4}, device, DType::kF32);
    Generator generator(5);
    encoder->init_weights(generator);
    attach_prefix_encoder(model, encoder);
    GenerationOptions options;
    options.max_new_tokens = 8;
    return generate(model, {7, 30, 2, 99}, options);
  };
  EXPECT_EQ(tokens(Device::cuda()), tokens(Device::cpu()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PtuningGpu, ::testing::Values("qwen2", "qwen3", "glm", "chatglm"));

}  // namespace
}  // namespace zt::models
