#include "train/preference/preference_objective.h"

#include <numeric>
#include <utility>

#include "autograd/grad_mode.h"
#include "models/peft/adapters_disabled.h"
#include "models/sequence_log_probs.h"
#include "runtime/error.h"
#include "train/evaluation.h"

namespace zt::train {

PreferenceObjective::PreferenceObjective(PreferenceOptions options, PreferenceReference reference)
    : options_(std::move(options)), reference_(std::move(reference)) {
  const bool needed = uses_reference(options_);
  ZT_REQUIRE(needed == (reference_.kind != PreferenceReference::Kind::kNone),
             "preference training: the " + preference_loss_name(options_.loss) + " loss " +
                 (needed ? "needs a reference model" : "takes no reference model"));
  ZT_REQUIRE(reference_.kind != PreferenceReference::Kind::kFrozenCopy || reference_.copy,
             "preference training: no reference copy");
  ZT_REQUIRE(reference_.kind != PreferenceReference::Kind::kInitialPolicy || reference_.precomputed,
             "preference training: the initial policy is a reference only precomputed");
}

// No gradient, nothing kept for backward.
models::SequenceLogProbs PreferenceObjective::reference_log_probs(models::CausalLM& policy,
                                                                  const models::PackedBatch& batch) const {
  autograd::NoGradGuard no_grad;
  if (reference_.kind == PreferenceReference::Kind::kFrozenCopy)
    return models::SequenceScorer(*reference_.copy, batch, false).log_probs();
  models::AdaptersDisabled base(policy);
  return models::SequenceScorer(policy, batch, false).log_probs();
}

PreferenceStep PreferenceObjective::forward(models::CausalLM& policy, const models::PackedBatch& batch,
                                            std::size_t pairs, double grad_scale,
                                            const std::vector<std::size_t>& samples) {
  std::optional<models::SequenceLogProbs> reference;
  if (pairs > 0 && reference_.precomputed) {
    ZT_REQUIRE(samples.size() == 2 * pairs && has_precomputed(),
               "preference training: the precomputed reference log-probabilities are missing for this batch");
    reference.emplace();
    for (std::size_t sample : samples) reference->sums.push_back(precomputed_.at(sample));
  } else if (pairs > 0 && reference_.kind != PreferenceReference::Kind::kNone) {
    reference = reference_log_probs(policy, batch);
  }
  const models::SequenceScorer scorer(policy, batch);
  const models::SequenceLogProbs& scores = scorer.log_probs();
  std::vector<double> coefficients(scores.sums.size(), 0.0);
  if (pairs == 0) return {scorer.weighted(coefficients, grad_scale), 0.0};
  ZT_REQUIRE(scores.sums.size() == 2 * pairs, "preference training: a micro-batch of " + std::to_string(pairs) +
                                                  " pairs has " + std::to_string(scores.sums.size()) + " sequences");
  PairLogProbs input;
  for (std::size_t i = 0; i < pairs; ++i) {
    input.chosen.push_back(scores.sums[2 * i]);
    input.rejected.push_back(scores.sums[2 * i + 1]);
    input.chosen_tokens.push_back(static_cast<double>(scores.label_tokens[2 * i]));
    input.rejected_tokens.push_back(static_cast<double>(scores.label_tokens[2 * i + 1]));
    if (reference) {
      input.ref_chosen.push_back(reference->sums[2 * i]);
      input.ref_rejected.push_back(reference->sums[2 * i + 1]);
    }
  }
  const PreferenceLoss loss = preference_loss(options_, input);
  // The loss is a mean over the pairs; the trainer sums pairs and divides by the global batch's.
  const auto count = static_cast<double>(pairs);
  for (std::size_t i = 0; i < pairs; ++i) {
    coefficients[2 * i] = loss.d_chosen[i] * count;
    coefficients[2 * i + 1] = loss.d_rejected[i] * count;
  }
  add_to_totals(loss, scores, policy.config().vocab_size);
  return {scorer.weighted(coefficients, grad_scale), loss.loss * count};
}

void PreferenceObjective::add_to_totals(const PreferenceLoss& loss, const models::SequenceLogProbs& policy,
                                        std::int64_t vocab) {
  const std::size_t pairs = loss.chosen_rewards.size();
  totals_.pairs += static_cast<double>(pairs);
  for (std::size_t i = 0; i < pairs; ++i) {
    totals_.chosen_rewards += loss.chosen_rewards[i];
    totals_.rejected_rewards += loss.rejected_rewards[i];
    totals_.accuracies += loss.chosen_rewards[i] > loss.rejected_rewards[i] ? 1.0 : 0.0;
    totals_.chosen_logps += loss.chosen_scores[i];
    totals_.rejected_logps += loss.rejected_scores[i];
    // TRL's logits/*: the mean logit over the label tokens' rows of the vocabulary.
    totals_.chosen_logits += policy.logit_sums[2 * i];
    totals_.chosen_logit_count += static_cast<double>(policy.label_tokens[2 * i] * vocab);
    totals_.rejected_logits += policy.logit_sums[2 * i + 1];
    totals_.rejected_logit_count += static_cast<double>(policy.label_tokens[2 * i + 1] * vocab);
  }
  if (loss.sft_loss) totals_.sft_loss += *loss.sft_loss * static_cast<double>(pairs);
  if (loss.odds_ratio_loss) totals_.odds_ratio_loss += *loss.odds_ratio_loss * static_cast<double>(pairs);
}

void PreferenceObjective::log_metrics(nlohmann::json& entry, const std::function<double(double, const char*)>& sum) {
  Totals t = totals_;
  totals_ = {};
  const double pairs = sum(t.pairs, "preference pairs since the last log");
  if (pairs <= 0) return;
  auto mean = [&](double value, double count, const char* what) { return sum(value, what) / std::max(count, 1.0); };
  const double chosen = mean(t.chosen_rewards, pairs, "rewards/chosen");
  const double rejected = mean(t.rejected_rewards, pairs, "rewards/rejected");
  entry["rewards/chosen"] = chosen;
  entry["rewards/rejected"] = rejected;
  entry["rewards/accuracies"] = mean(t.accuracies, pairs, "rewards/accuracies");
  entry["rewards/margins"] = chosen - rejected;
  entry["logps/chosen"] = mean(t.chosen_logps, pairs, "logps/chosen");
  entry["logps/rejected"] = mean(t.rejected_logps, pairs, "logps/rejected");
  entry["logits/chosen"] = mean(t.chosen_logits, sum(t.chosen_logit_count, "logits/chosen count"), "logits/chosen");
  entry["logits/rejected"] =
      mean(t.rejected_logits, sum(t.rejected_logit_count, "logits/rejected count"), "logits/rejected");
  if (options_.loss == PreferenceLossType::kOrpo) {
    entry["sft_loss"] = mean(t.sft_loss, pairs, "sft_loss");
    entry["odds_ratio_loss"] = mean(t.odds_ratio_loss, pairs, "odds_ratio_loss");
  }
}

nlohmann::json PreferenceObjective::evaluate(models::CausalLM& policy, const std::vector<TokenizedSample>& samples,
                                             std::int64_t pairs_per_batch, const BatchLayout& layout) const {
  autograd::NoGradGuard no_grad;
  PreferenceObjective evaluation(options_, reference_);  // its own totals
  evaluation.precomputed_ = precomputed_eval_;
  const std::size_t pairs = samples.size() / 2,
                    per_batch = static_cast<std::size_t>(std::max<std::int64_t>(1, pairs_per_batch));
  double loss_sum = 0.0;
  for (std::size_t first = 0; first < pairs; first += per_batch) {
    const std::size_t count = std::min(per_batch, pairs - first);
    std::vector<std::size_t> indices(2 * count);
    std::iota(indices.begin(), indices.end(), 2 * first);
    loss_sum +=
        evaluation.forward(policy, device_batch(pack(samples, indices, layout), policy.device()), count, 1.0, indices)
            .loss_sum;
  }
  nlohmann::json metrics;
  evaluation.log_metrics(metrics, [](double value, const char*) { return value; });
  nlohmann::json entry = {{"eval_loss", loss_sum / static_cast<double>(std::max<std::size_t>(pairs, 1))}};
  for (const auto& [key, value] : metrics.items()) entry["eval_" + key] = value;
  return entry;
}

std::vector<double> PreferenceObjective::precompute_reference(models::CausalLM& policy,
                                                              const std::vector<TokenizedSample>& samples,
                                                              std::int64_t pairs_per_batch,
                                                              const BatchLayout& layout) const {
  autograd::NoGradGuard no_grad;
  std::optional<models::AdaptersDisabled> base;
  if (reference_.kind == PreferenceReference::Kind::kAdaptersOff) base.emplace(policy);
  std::vector<double> sums;
  const std::size_t per_batch = static_cast<std::size_t>(std::max<std::int64_t>(1, pairs_per_batch));
  for (std::size_t first = 0; first < samples.size(); first += 2 * per_batch) {
    std::vector<std::size_t> indices(std::min(2 * per_batch, samples.size() - first));
    std::iota(indices.begin(), indices.end(), first);
    const models::SequenceLogProbs scores =
        models::SequenceScorer(policy, device_batch(pack(samples, indices, layout), policy.device()), false)
            .log_probs();
    sums.insert(sums.end(), scores.sums.begin(), scores.sums.end());
  }
  return sums;
}

void PreferenceObjective::set_precomputed(std::vector<double> train, std::vector<double> eval) {
  precomputed_ = std::move(train);
  precomputed_eval_ = std::move(eval);
}

nlohmann::json PreferenceObjective::precomputed_json() const {
  return {{"train", precomputed_}, {"eval", precomputed_eval_}};
}

void PreferenceObjective::load_precomputed(const nlohmann::json& saved, std::size_t train_samples,
                                           std::size_t eval_samples, const std::string& source) {
  std::vector<double> train = saved.at("train").get<std::vector<double>>();
  std::vector<double> eval = saved.at("eval").get<std::vector<double>>();
  ZT_REQUIRE(train.size() == train_samples && eval.size() == eval_samples,
             source + " holds reference log-probabilities of " + std::to_string(train.size() / 2) + " training and " +
                 std::to_string(eval.size() / 2) + " evaluation pairs, but this run has " +
                 std::to_string(train_samples / 2) + " and " + std::to_string(eval_samples / 2) +
                 ": resume with the data, --max_length and --max_samples it was trained with");
  set_precomputed(std::move(train), std::move(eval));
}

}  // namespace zt::train
