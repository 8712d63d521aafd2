// A DPO micro-batch with each prompt stored once on the GPU (the gathers of
// cuda/embedding/row_gather.cu inside every layer's attention, the kernels of the model at its
// sizes): per-sequence log-probabilities and gradients against the same model on the whole
// sequences, in float32 and bfloat16.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/init.h"
#include "models/sequence_log_probs.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/data/batching.h"
#include "train/evaluation.h"

namespace zt::train {
namespace {

constexpr std::int32_t kX = kIgnoreIndex;

// Two pairs with 6- and 3-token prompts, a third whose prompt is labelled (stored whole).
std::vector<TokenizedSample> pairs() {
  return {{{3, 7, 13, 11, 2, 9, 30, 4}, {kX, kX, kX, kX, kX, kX, 30, 4}},
          {{3, 7, 13, 11, 2, 9, 5, 2, 8}, {kX, kX, kX, kX, kX, kX, 5, 2, 8}},
          {{9, 1, 4, 6, 8}, {kX, kX, kX, 6, 8}},
          {{9, 1, 4, 20}, {kX, kX, kX, 20}},
          {{12, 14, 16, 18}, {12, 14, 16, 18}},
          {{12, 14, 17}, {12, 14, 17}}};
}

TEST(PairPromptPackingGpu, ScoresAndGradientsEqualTheWholeSequences) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<TokenizedSample> samples = pairs();
  const std::vector<std::size_t> all{0, 1, 2, 3, 4, 5};
  const std::vector<double> coefficients = {0.7, -1.3, 0.25, 2.0, -0.5, 1.1};
  const PackedBatch shared_batch = pack(samples, all, {.share_pair_prompts = true});
  ASSERT_FALSE(shared_batch.shared.empty());
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tolerance = dtype == DType::kF32 ? 1e-5 : 3e-2;
    const models::ModelOptions options{.device = Device::cuda(), .dtype = dtype};
    const models::CausalLM whole_model = models::init_model(testing::tiny_trainer_config(), 4, options);
    const models::CausalLM shared_model = models::init_model(testing::tiny_trainer_config(), 4, options);
    const models::SequenceScorer whole(whole_model, device_batch(pack(samples, all), Device::cuda()));
    const models::SequenceScorer shared(shared_model, device_batch(shared_batch, Device::cuda()));
    for (std::size_t s = 0; s < coefficients.size(); ++s) {
      const double want = whole.log_probs().sums[s];
      EXPECT_NEAR(shared.log_probs().sums[s], want, tolerance * std::max(1.0, std::abs(want))) << "sequence " << s;
    }
    whole.weighted(coefficients, 2.0).backward();
    shared.weighted(coefficients, 2.0).backward();
    int compared = 0;
    for (const auto& p : shared_model.named_parameters()) {
      const std::vector<double> a = whole_model.parameter(p.name).grad().to(Device::cpu()).to_vector();
      const std::vector<double> b = p.variable.grad().to(Device::cpu()).to_vector();
      double scale = 0.0, worst = 0.0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        scale = std::max(scale, std::abs(a[i]));
        worst = std::max(worst, std::abs(a[i] - b[i]));
      }
      EXPECT_LE(worst, tolerance * std::max(scale, 1e-3)) << p.name;
      ++compared;
    }
    EXPECT_GT(compared, 10);
  }
}

}  // namespace
}  // namespace zt::train
