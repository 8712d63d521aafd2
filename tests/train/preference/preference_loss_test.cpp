// The preference losses against fixtures of TRL's and LLaMA-Factory's formulas:
// scripts/make_preference_fixtures.py writes them to tests/data/preference/loss_fixtures.json
// (values in float64; gradients by central differences there, by the chain rule here).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "train/preference/preference_loss.h"

namespace zt::train {
namespace {

struct Fixture {
  std::string name;
  double loss;
  std::vector<double> d_chosen, d_rejected, chosen_rewards, rejected_rewards;
};

// The fixtures scripts/make_preference_fixtures.py writes, one per case of
// scripts/preference_cases.py.
std::vector<Fixture> fixtures() {
  const std::filesystem::path path = std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/preference/loss_fixtures.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.is_open()) << path
                            << " is missing: run `python3 scripts/make_preference_fixtures.py` and commit its output";
  if (!in.is_open()) return {};
  std::vector<Fixture> out;
  const nlohmann::json file = nlohmann::json::parse(in);
  for (const nlohmann::json& c : file.at("cases"))
    out.push_back({c.at("name").get<std::string>(), c.at("loss").get<double>(),
                   c.at("d_chosen").get<std::vector<double>>(), c.at("d_rejected").get<std::vector<double>>(),
                   c.at("chosen_rewards").get<std::vector<double>>(),
                   c.at("rejected_rewards").get<std::vector<double>>()});
  return out;
}

PairLogProbs pairs() {
  return {.chosen = {-12.5, -30.25, -7.0},
          .rejected = {-14.0, -28.5, -9.75},
          .chosen_tokens = {10, 25, 4},
          .rejected_tokens = {12, 20, 5},
          .ref_chosen = {-13.0, -29.0, -8.5},
          .ref_rejected = {-13.5, -29.5, -9.0}};
}

PreferenceOptions options_of(const std::string& name) {
  PreferenceOptions o;
  if (name == "sigmoid_smoothing") return {.beta = 0.5, .label_smoothing = 0.2};
  if (name == "hinge") return {.loss = PreferenceLossType::kHinge, .beta = 0.5};
  if (name == "ipo") return {.loss = PreferenceLossType::kIpo, .beta = 0.1};
  if (name == "kto_pair") return {.loss = PreferenceLossType::kKtoPair, .beta = 0.1};
  if (name == "orpo") return {.loss = PreferenceLossType::kOrpo, .beta = 0.1};
  if (name == "simpo") return {.loss = PreferenceLossType::kSimpo, .beta = 2.0, .simpo_gamma = 0.5};
  if (name == "sigmoid_ftx") o.ftx = 0.5;
  if (name == "sigmoid_rpo") o.rpo_alpha = 1.0;
  if (name == "sigmoid_reference_free") o.reference_free = true;
  return o;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tolerance,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << what << " [" << i << "]";
}

TEST(PreferenceLoss, EveryLossTypeMatchesTheFixtures) {
  const std::vector<Fixture> all = fixtures();
  EXPECT_EQ(all.size(), 10u) << "a case of scripts/preference_cases.py is missing";
  for (const Fixture& f : all) {
    SCOPED_TRACE(f.name);
    PairLogProbs input = pairs();
    const PreferenceOptions o = options_of(f.name);
    if (!uses_reference(o)) input.ref_chosen = input.ref_rejected = {};
    const PreferenceLoss out = preference_loss(o, input);
    EXPECT_NEAR(out.loss, f.loss, 1e-12);
    expect_near(out.d_chosen, f.d_chosen, 1e-7, "d_chosen");
    expect_near(out.d_rejected, f.d_rejected, 1e-7, "d_rejected");
    expect_near(out.chosen_rewards, f.chosen_rewards, 1e-12, "chosen_rewards");
    expect_near(out.rejected_rewards, f.rejected_rewards, 1e-12, "rejected_rewards");
  }
}

TEST(PreferenceLoss, OrpoReportsItsTwoTermsAsLlamaFactoryLogsThem) {
  const PreferenceLoss out = preference_loss(options_of("orpo"), pairs());
  ASSERT_TRUE(out.sft_loss && out.odds_ratio_loss);
  EXPECT_NEAR(*out.sft_loss + 0.1 * *out.odds_ratio_loss, out.loss, 1e-12);
  EXPECT_NEAR(*out.sft_loss, -(-12.5 / 10 + -30.25 / 25 + -7.0 / 4) / 3, 1e-12);
}

TEST(PreferenceLoss, NamesAndWhichLossesAverageOrReadTheReference) {
  for (const char* name : {"sigmoid", "hinge", "ipo", "kto_pair", "orpo", "simpo"})
    EXPECT_EQ(preference_loss_name(*preference_loss_from_name(name)), name);
  EXPECT_FALSE(preference_loss_from_name("bco_pair"));
  EXPECT_TRUE(averages_log_probs(PreferenceLossType::kIpo));
  EXPECT_FALSE(averages_log_probs(PreferenceLossType::kSigmoid));
  EXPECT_FALSE(uses_reference({.loss = PreferenceLossType::kSimpo}));
  EXPECT_FALSE(uses_reference({.reference_free = true}));
  EXPECT_TRUE(uses_reference({.loss = PreferenceLossType::kKtoPair}));
}

TEST(PreferenceLoss, BadInputIsRefusedWithWhatIsWrong) {
  PairLogProbs missing_reference = pairs();
  missing_reference.ref_chosen.clear();
  EXPECT_THROW(preference_loss({}, missing_reference), Error);
  PairLogProbs empty_answer = pairs();
  empty_answer.rejected_tokens[1] = 0;
  try {
    preference_loss({}, empty_answer);
    FAIL() << "an answer without label tokens was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pair 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(preference_loss({}, PairLogProbs{}), Error);
}

}  // namespace
}  // namespace zt::train
