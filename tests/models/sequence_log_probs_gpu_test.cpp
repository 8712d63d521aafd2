// Per-sequence log-probabilities on the GPU (the fused head's per-token losses and weights in
// CUDA, the logits' row sums, a LoRA model with its adapter switched off) against the CPU from
// the same weights (init_model draws the same values on any device), in float32 and bfloat16.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "models/batch.h"
#include "models/init.h"
#include "models/peft/adapters_disabled.h"
#include "models/sequence_log_probs.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_trainer_model.h"

namespace zt::models {
namespace {

PackedBatch pair_batch(Device device) {
  return pack_sequences({{3, 7, 13, 11, 30}, {3, 7, 5, 2}, {9, 1, 4, 4, 8, 6}, {9, 1, 20, 21}},
                        {{-100, 13, 11, 30, 4}, {-100, 5, 2, 1}, {-100, -100, -100, 8, 6, 2}, {-100, 20, 21, 3}},
                        device);
}

// With the head training (its gradients formed in a second pass) and frozen (one pass whose
// rows weighted() scales, as under LoRA).
TEST(SequenceLogProbsGpu, ScoresAndHeadGradientsMatchTheCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const ModelConfig config = testing::tiny_trainer_config();
  const std::vector<double> coefficients = {0.7, -1.3, 0.25, 2.0};
  for (bool frozen_head : {false, true}) {
    SCOPED_TRACE(frozen_head ? "frozen head" : "trained head");
    const CausalLM cpu = init_model(config, 3, {.dtype = DType::kF32});
    if (frozen_head) cpu.lm_head_weight().set_requires_grad(false);
    const SequenceScorer cpu_scorer(cpu, pair_batch(Device::cpu()));
    cpu_scorer.weighted(coefficients, 2.0).backward();
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(dtype_name(dtype));
      const double tolerance = dtype == DType::kF32 ? 1e-4 : 5e-2;
      const CausalLM gpu = init_model(config, 3, {.device = Device::cuda(), .dtype = dtype});
      if (frozen_head) gpu.lm_head_weight().set_requires_grad(false);
      const SequenceScorer scorer(gpu, pair_batch(Device::cuda()));
      const SequenceLogProbs& want = cpu_scorer.log_probs();
      const SequenceLogProbs& have = scorer.log_probs();
      EXPECT_EQ(have.label_tokens, want.label_tokens);
      for (std::size_t s = 0; s < want.sums.size(); ++s) {
        EXPECT_NEAR(have.sums[s], want.sums[s], tolerance * std::max(1.0, std::abs(want.sums[s]))) << s;
        EXPECT_NEAR(have.logit_sums[s], want.logit_sums[s], tolerance * std::max(1.0, std::abs(want.logit_sums[s])))
            << s;
      }
      scorer.weighted(coefficients, 2.0).backward();
      for (const char* name : {"lm_head.weight", "model.layers.1.mlp.down_proj.weight"}) {
        if (!cpu.parameter(name).requires_grad()) continue;
        const std::vector<double> a = cpu.parameter(name).grad().to_vector();
        const std::vector<double> b = gpu.parameter(name).grad().to(Device::cpu()).to_vector();
        double scale = 0.0, worst = 0.0;
        for (std::size_t i = 0; i < a.size(); ++i) {
          scale = std::max(scale, std::abs(a[i]));
          worst = std::max(worst, std::abs(a[i] - b[i]));
        }
        EXPECT_LE(worst, tolerance * std::max(scale, 1e-3)) << name;
      }
    }
  }
}

TEST(SequenceLogProbsGpu, AdaptersDisabledScoresTheBaseModel) {
  ZT_SKIP_WITHOUT_GPU();
  const ModelConfig config = testing::tiny_trainer_config();
  CausalLM model = init_model(config, 5, {.device = Device::cuda(), .dtype = DType::kF32});
  const CausalLM base = init_model(config, 5, {.device = Device::cuda(), .dtype = DType::kF32});
  std::vector<LayerLora> lora(static_cast<std::size_t>(config.num_layers));
  for (LayerLora& layer : lora)
    // Random factors: constant ones shift every query entry alike, which attention barely sees.
    layer[kQ] = LoraUpdate{
        .a = Variable(Tensor::normal({2, config.hidden_size}, 4, 0, 0.0, 0.5, DType::kF32).to(Device::cuda())),
        .b = Variable(
            Tensor::normal({config.num_heads * config.head_dim, 2}, 5, 0, 0.0, 0.5, DType::kF32).to(Device::cuda())),
        .scale = 2.0};
  model.set_lora(lora);
  autograd::NoGradGuard no_grad;
  const PackedBatch batch = pair_batch(Device::cuda());
  const std::vector<double> adapted = SequenceScorer(model, batch).log_probs().sums;
  const std::vector<double> plain = SequenceScorer(base, batch).log_probs().sums;
  AdaptersDisabled off(model);
  const std::vector<double> disabled = SequenceScorer(model, batch).log_probs().sums;
  for (std::size_t s = 0; s < plain.size(); ++s) EXPECT_EQ(disabled[s], plain[s]) << s;
  EXPECT_GT(std::abs(adapted[0] - plain[0]), 1e-4);
}

}  // namespace
}  // namespace zt::models
