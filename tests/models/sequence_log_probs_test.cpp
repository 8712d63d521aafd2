// Per-sequence log-probabilities through the fused head (models/sequence_log_probs.h) against
// log-softmax of the full logits, the gradient of their weighted sum against finite
// differences, and the model with its adapters switched off against the plain model.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "models/batch.h"
#include "models/init.h"
#include "models/peft/adapters_disabled.h"
#include "models/peft/lora.h"
#include "models/sequence_log_probs.h"
#include "tests/common/gradcheck.h"
#include "tests/common/tiny_trainer_model.h"

namespace zt::models {
namespace {

// Two pairs, chosen then rejected, prompts unlabelled; the third sequence has one label only.
PackedBatch pair_batch() {
  return pack_sequences({{3, 7, 13, 11, 30}, {3, 7, 5, 2}, {9, 1, 4, 4, 8, 6}, {9, 1, 20}},
                        {{-100, 13, 11, 30, 4}, {-100, 5, 2, 1}, {-100, -100, -100, 8, 6, 2}, {-100, 20, -100}});
}

// log softmax(logits)[label] summed per sequence, and the logits summed over label rows.
std::pair<std::vector<double>, std::vector<double>> full_logit_reference(const CausalLM& model,
                                                                         const PackedBatch& batch) {
  autograd::NoGradGuard no_grad;
  const autograd::Variable hidden = model.forward_hidden(batch.input_ids, batch.positions, batch.cu_seqlens);
  const Tensor logits = model.lm_head(hidden).data();
  const std::vector<double> z = logits.to_vector(), labels = batch.labels.to_vector(),
                            bounds = batch.cu_seqlens.to_vector();
  const std::int64_t vocab = logits.size(1);
  std::vector<double> logps, logit_sums;
  for (std::size_t s = 0; s + 1 < bounds.size(); ++s) {
    double logp = 0.0, logit_sum = 0.0;
    for (auto t = static_cast<std::int64_t>(bounds[s]); t < static_cast<std::int64_t>(bounds[s + 1]); ++t) {
      const auto label = static_cast<std::int64_t>(labels[static_cast<std::size_t>(t)]);
      if (label == kIgnoreIndex) continue;
      const double* row = z.data() + t * vocab;
      double max = row[0], sum = 0.0;
      for (std::int64_t v = 0; v < vocab; ++v) max = std::max(max, row[v]);
      for (std::int64_t v = 0; v < vocab; ++v) {
        sum += std::exp(row[v] - max);
        logit_sum += row[v];
      }
      logp += row[label] - max - std::log(sum);
    }
    logps.push_back(logp);
    logit_sums.push_back(logit_sum);
  }
  return {logps, logit_sums};
}

TEST(SequenceLogProbs, EqualLogSoftmaxOfTheFullLogits) {
  const CausalLM model = testing::random_tiny_model(3);
  const PackedBatch batch = pair_batch();
  const auto [logps, logit_sums] = full_logit_reference(model, batch);
  autograd::NoGradGuard no_grad;
  const SequenceLogProbs got = SequenceScorer(model, batch).log_probs();
  ASSERT_EQ(got.sums.size(), 4u);
  EXPECT_EQ(got.label_tokens, (std::vector<std::int64_t>{4, 3, 3, 1}));
  for (std::size_t s = 0; s < 4; ++s) {
    EXPECT_NEAR(got.sums[s], logps[s], 1e-10) << s;
    EXPECT_NEAR(got.logit_sums[s], logit_sums[s], 1e-10) << s;
    EXPECT_LT(got.sums[s], 0.0);
  }
}

TEST(SequenceLogProbs, WeightedSumHasTheGradientOfFiniteDifferences) {
  const CausalLM model = testing::random_tiny_model(5);
  const PackedBatch batch = pair_batch();
  const std::vector<double> coefficients = {0.7, -1.3, 0.25, 2.0};
  auto objective = [&] {
    autograd::NoGradGuard no_grad;
    const std::vector<double> sums = SequenceScorer(model, batch).log_probs().sums;
    double total = 0.0;
    for (std::size_t s = 0; s < sums.size(); ++s) total += coefficients[s] * sums[s];
    return total;
  };
  const SequenceScorer scorer(model, batch);
  const autograd::Variable weighted = scorer.weighted(coefficients, 4.0);
  EXPECT_NEAR(weighted.data().item(), objective(), 1e-10);
  weighted.backward();
  // The head's gradients were formed for weighted · 4; backward's upstream 1 divides the 4 out
  // again, as the fused token loss's does.
  EXPECT_GT(testing::expect_parameter_gradients_match(model, {"lm_head", "layers.1.mlp", "embed"}, 5, objective), 10);
}

// A frozen head (LoRA's) runs once: the scorer's pass keeps each token's gradient and weighted()
// scales it. The body's gradients, the value and the log-probabilities equal those of the same
// model whose head trains (two passes, the factors inside the second).
TEST(SequenceLogProbs, AFrozenHeadGivesTheTrainableHeadsBodyGradients) {
  const std::vector<double> coefficients = {0.7, -1.3, 0.25, 2.0};
  const PackedBatch batch = pair_batch();
  const CausalLM trained = testing::random_tiny_model(7), frozen = testing::random_tiny_model(7);
  frozen.lm_head_weight().set_requires_grad(false);
  ASSERT_TRUE(trained.lm_head_weight().requires_grad());
  const SequenceScorer trained_scorer(trained, batch), frozen_scorer(frozen, batch);
  EXPECT_EQ(frozen_scorer.log_probs().sums, trained_scorer.log_probs().sums);
  const autograd::Variable a = trained_scorer.weighted(coefficients, 8.0);
  const autograd::Variable b = frozen_scorer.weighted(coefficients, 8.0);
  EXPECT_NEAR(b.data().item(), a.data().item(), 1e-12);
  a.backward();
  b.backward();
  EXPECT_GT(testing::expect_same_parameter_gradients(frozen, trained, 1e-12), 5);
}

TEST(AdaptersDisabled, TheModelRunsAsTheBaseModelAndTheAdapterComesBack) {
  CausalLM with_lora = testing::random_tiny_model(9);
  const CausalLM base = testing::random_tiny_model(9);
  attach_lora(with_lora,
              {.rank = 2, .alpha = 4.0, .target_modules = {"q_proj", "down_proj"}, .base_model_name_or_path = {}}, 11);
  for (const LayerLora& layer : with_lora.lora())  // B starts at zero; make the update matter
    for (const auto& update : layer)
      if (update)
        Tensor(update->b.data()).copy_from(Tensor::normal(update->b.data().shape(), 2, 0, 0.0, 0.5, DType::kF64));
  const PackedBatch batch = pair_batch();
  autograd::NoGradGuard no_grad;
  const std::vector<double> adapted = SequenceScorer(with_lora, batch).log_probs().sums;
  const std::vector<double> plain = SequenceScorer(base, batch).log_probs().sums;
  {
    AdaptersDisabled off(with_lora);
    EXPECT_FALSE(with_lora.adapters_enabled());
    const std::vector<double> disabled = SequenceScorer(with_lora, batch).log_probs().sums;
    for (std::size_t s = 0; s < plain.size(); ++s) EXPECT_EQ(disabled[s], plain[s]) << s;
  }
  EXPECT_TRUE(with_lora.adapters_enabled());
  EXPECT_EQ(SequenceScorer(with_lora, batch).log_probs().sums, adapted);
  EXPECT_GT(std::abs(adapted[0] - plain[0]), 1e-3);
}

}  // namespace
}  // namespace zt::models
