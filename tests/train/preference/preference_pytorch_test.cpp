// --stage dpo against PyTorch: scripts/make_dpo_reference.py computes, with torch on the
// shipped tiny Qwen2 (examples/tiny-qwen) in float32, every loss type's value, TRL's logged
// metrics and the gradients, from TRL's and LLaMA-Factory's formulas, into
// tests/data/preference/tiny_qwen_dpo.json. The same pairs, policy and reference (the model's
// weights times 0.9) go through the objective the trainer runs; everything agrees within 1e-5.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/weights/weights.h"
#include "train/evaluation.h"
#include "train/preference/preference_objective.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(ZT_SOURCE_DIR) / "examples" / "tiny-qwen";
const fs::path kFixture = fs::path(ZT_SOURCE_DIR) / "tests" / "data" / "preference" / "tiny_qwen_dpo.json";

PreferenceOptions options_of(const nlohmann::json& o) {
  PreferenceOptions options{.loss = *preference_loss_from_name(o.at("loss").get<std::string>()),
                            .beta = o.at("beta").get<double>()};
  options.label_smoothing = o.value("label_smoothing", 0.0);
  options.simpo_gamma = o.value("simpo_gamma", 0.5);
  options.ftx = o.value("ftx", 0.0);
  if (o.contains("rpo_alpha")) options.rpo_alpha = o["rpo_alpha"].get<double>();
  options.reference_free = o.value("reference_free", false);
  return options;
}

// The fixture's pairs as the trainer lays them out: [c0, r0, c1, r1], answers labelled, each
// prompt stored once or (layout {}) every sequence whole.
models::PackedBatch pair_batch(const nlohmann::json& pairs, const BatchLayout& layout) {
  std::vector<TokenizedSample> samples;
  for (const nlohmann::json& pair : pairs)
    for (const char* side : {"chosen", "rejected"}) {
      TokenizedSample sample;
      for (int id : pair["prompt"]) {
        sample.ids.push_back(id);
        sample.labels.push_back(kIgnoreIndex);
      }
      for (int id : pair[side]) {
        sample.ids.push_back(id);
        sample.labels.push_back(id);
      }
      samples.push_back(sample);
    }
  std::vector<std::size_t> all(samples.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return device_batch(pack(samples, all, layout), Device::cpu());
}

class PreferencePytorch : public ::testing::TestWithParam<bool> {};

TEST_P(PreferencePytorch, LossMetricsAndGradientsEqualTorchForEveryLossType) {
  const nlohmann::json fixture = nlohmann::json::parse(std::ifstream(kFixture));
  const models::PackedBatch batch = pair_batch(fixture.at("pairs"), {.share_pair_prompts = GetParam()});
  ASSERT_EQ(batch.shared.defined(), GetParam());
  const std::size_t pairs = fixture["pairs"].size();
  auto reference = std::make_shared<models::CausalLM>(models::load_model(kModel.string(), {.dtype = DType::kF32}));
  for (const auto& p : reference->named_parameters()) {
    Tensor value = p.variable.data();
    std::vector<double> scaled = value.to_vector();
    for (double& x : scaled) x *= fixture.at("reference_scale").get<double>();
    value.copy_from(Tensor::from_values(scaled, value.shape(), value.dtype()));
  }
  ASSERT_EQ(fixture.at("cases").size(), 10u);
  for (const nlohmann::json& c : fixture["cases"]) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    models::CausalLM policy = models::load_model(kModel.string(), {.dtype = DType::kF32});
    const PreferenceOptions options = options_of(c.at("options"));
    PreferenceReference ref;
    if (uses_reference(options)) ref = {.kind = PreferenceReference::Kind::kFrozenCopy, .copy = reference};
    PreferenceObjective objective(options, ref);
    const PreferenceStep step = objective.forward(policy, batch, pairs, 1.0);
    EXPECT_NEAR(step.loss_sum / static_cast<double>(pairs), c.at("loss").get<double>(), 1e-5);
    step.surrogate.backward();
    nlohmann::json logged;
    objective.log_metrics(logged, [](double value, const char*) { return value; });
    for (const auto& [key, value] : c.at("metrics").items()) {
      ASSERT_TRUE(logged.contains(key)) << key;
      EXPECT_NEAR(logged[key].get<double>(), value.get<double>(), 1e-5 * std::max(1.0, std::abs(value.get<double>())))
          << key;
    }
    for (const auto& [parameter, expected] : c.at("gradients").items()) {
      const std::vector<double> grad = policy.parameter(parameter).grad().to_vector();
      for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_NEAR(grad[i] / static_cast<double>(pairs), expected[i].get<double>(), 1e-5)
            << parameter << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PromptsStoredOnceOrEachSequenceWhole, PreferencePytorch, ::testing::Bool());

}  // namespace
}  // namespace zt::train
