#include "train/preference/preference_loss.h"

#include <algorithm>
#include <cmath>

#include "runtime/enum_names.h"
#include "runtime/error.h"

namespace zt::train {
namespace {

double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
// log σ(x) = -softplus(-x), without overflow either way.
double log_sigmoid(double x) { return -(std::max(-x, 0.0) + std::log1p(std::exp(-std::abs(x)))); }

void check(const PreferenceOptions& options, const PairLogProbs& p) {
  const std::size_t n = p.chosen.size();
  ZT_REQUIRE(n > 0, "preference loss: no pair");
  ZT_REQUIRE(p.rejected.size() == n && p.chosen_tokens.size() == n && p.rejected_tokens.size() == n,
             "preference loss: the chosen and rejected vectors differ in length");
  if (uses_reference(options))
    ZT_REQUIRE(p.ref_chosen.size() == n && p.ref_rejected.size() == n,
               "preference loss: " + preference_loss_name(options.loss) + " needs the reference's log-probabilities");
  for (std::size_t i = 0; i < n; ++i) {
    ZT_REQUIRE(p.chosen_tokens[i] > 0 && p.rejected_tokens[i] > 0,
               "preference loss: pair " + std::to_string(i) + " has an answer without a label token");
    ZT_REQUIRE(std::isfinite(p.chosen[i]) && std::isfinite(p.rejected[i]),
               "preference loss: pair " + std::to_string(i) + " has a non-finite log-probability");
  }
}

// The DPO family (TRL's dpo_loss): z = (πc - πr) - (ρc - ρr); returns d(loss_i)/dz.
double dpo_term(const PreferenceOptions& o, double z, double& loss) {
  const double b = o.beta, e = o.label_smoothing;
  switch (o.loss) {
    case PreferenceLossType::kSigmoid:
      loss = -log_sigmoid(b * z) * (1 - e) - log_sigmoid(-b * z) * e;
      return -(1 - e) * b * sigmoid(-b * z) + e * b * sigmoid(b * z);
    case PreferenceLossType::kHinge:
      loss = std::max(0.0, 1 - b * z);
      return 1 - b * z > 0 ? -b : 0.0;  // torch's relu passes no gradient at 0
    default:                            // ipo
      loss = (z - 1 / (2 * b)) * (z - 1 / (2 * b));
      return 2 * (z - 1 / (2 * b));
  }
}

// TRL's loss_type names (and LLaMA-Factory's pref_loss).
constexpr EnumName<PreferenceLossType> kPreferenceLossNames[] = {
    {PreferenceLossType::kSigmoid, "sigmoid"}, {PreferenceLossType::kHinge, "hinge"},
    {PreferenceLossType::kIpo, "ipo"},         {PreferenceLossType::kKtoPair, "kto_pair"},
    {PreferenceLossType::kOrpo, "orpo"},       {PreferenceLossType::kSimpo, "simpo"}};

}  // namespace

std::string preference_loss_name(PreferenceLossType type) { return name_of(kPreferenceLossNames, type, "?"); }

std::optional<PreferenceLossType> preference_loss_from_name(const std::string& name) {
  return find_value(kPreferenceLossNames, name);
}

bool averages_log_probs(PreferenceLossType type) {
  return type == PreferenceLossType::kIpo || type == PreferenceLossType::kOrpo || type == PreferenceLossType::kSimpo;
}

bool uses_reference(const PreferenceOptions& options) {
  return !options.reference_free && options.loss != PreferenceLossType::kOrpo &&
         options.loss != PreferenceLossType::kSimpo;
}

PreferenceLoss preference_loss(const PreferenceOptions& o, const PairLogProbs& p) {
  check(o, p);
  const std::size_t n = p.chosen.size();
  const auto count = static_cast<double>(n);
  const bool average = averages_log_probs(o.loss), reference = uses_reference(o);
  PreferenceLoss out;
  out.d_chosen.assign(n, 0.0);
  out.d_rejected.assign(n, 0.0);
  // The scores the loss reads (sums, or means per token), and the reference's alike.
  std::vector<double> c(n), r(n), rc(n, 0.0), rr(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    c[i] = average ? p.chosen[i] / p.chosen_tokens[i] : p.chosen[i];
    r[i] = average ? p.rejected[i] / p.rejected_tokens[i] : p.rejected[i];
    if (reference) {
      rc[i] = average ? p.ref_chosen[i] / p.chosen_tokens[i] : p.ref_chosen[i];
      rr[i] = average ? p.ref_rejected[i] / p.rejected_tokens[i] : p.ref_rejected[i];
    }
  }
  out.chosen_scores = c;
  out.rejected_scores = r;
  // d(loss)/d(score) first; the chain to the sums comes at the end.
  std::vector<double> dc(n, 0.0), dr(n, 0.0);
  double total = 0.0;
  const double b = o.beta;
  if (o.loss == PreferenceLossType::kKtoPair) {
    // TRL's kto_pair: each half's KL is the batch mean of the other half's log-ratios,
    // clamped at 0, with the gradient flowing through it as through torch's clamp.
    double mean_c = 0.0, mean_r = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      mean_c += (c[i] - rc[i]) / count;
      mean_r += (r[i] - rr[i]) / count;
    }
    const double chosen_kl = std::max(mean_c, 0.0), rejected_kl = std::max(mean_r, 0.0);
    double sum_ga = 0.0, sum_gb = 0.0;
    std::vector<double> ga(n), gb(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double xa = b * ((c[i] - rc[i]) - rejected_kl), xb = b * (chosen_kl - (r[i] - rr[i]));
      total += (1 - sigmoid(xa)) + (1 - sigmoid(xb));
      ga[i] = -sigmoid(xa) * sigmoid(-xa) * b / (2 * count);  // d/d(xa/b) of the mean over 2n terms
      gb[i] = -sigmoid(xb) * sigmoid(-xb) * b / (2 * count);
      sum_ga += ga[i];
      sum_gb += gb[i];
    }
    total /= 2;  // the mean over 2n terms, times n (divided by n below)
    // ga, gb are derivatives of the mean; dc, dr are per pair (divided by n below).
    for (std::size_t i = 0; i < n; ++i) {
      dc[i] = count * (ga[i] + (mean_c >= 0 ? sum_gb / count : 0.0));
      dr[i] = count * (-gb[i] - (mean_r >= 0 ? sum_ga / count : 0.0));
    }
  } else if (o.loss == PreferenceLossType::kOrpo) {
    // LLaMA-Factory's odds_ratio_loss: -c + β · -log σ(log odds(c) - log odds(r)).
    double sft = 0.0, ratio = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double log_odds = (c[i] - r[i]) - (std::log1p(-std::exp(c[i])) - std::log1p(-std::exp(r[i])));
      const double or_loss = -log_sigmoid(log_odds);
      total += -c[i] + b * or_loss;
      sft += -c[i];
      ratio += or_loss;
      const double d_log_odds = -sigmoid(-log_odds) * b;
      dc[i] = -1 + d_log_odds / (1 - std::exp(c[i]));
      dr[i] = -d_log_odds / (1 - std::exp(r[i]));
    }
    out.sft_loss = sft / count;
    out.odds_ratio_loss = ratio / count;
  } else if (o.loss == PreferenceLossType::kSimpo) {
    for (std::size_t i = 0; i < n; ++i) {
      const double x = b * (c[i] - r[i]) - o.simpo_gamma;
      total += -log_sigmoid(x);
      dc[i] = -b * sigmoid(-x);
      dr[i] = b * sigmoid(-x);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      double loss = 0.0;
      const double dz = dpo_term(o, (c[i] - r[i]) - (rc[i] - rr[i]), loss);
      total += loss;
      dc[i] = dz;
      dr[i] = -dz;
    }
  }
  // LLaMA-Factory's pref_ftx: the chosen answer's mean token loss, per pair.
  if (o.ftx > 1e-6)
    for (std::size_t i = 0; i < n; ++i) {
      const double mean_logp = p.chosen[i] / p.chosen_tokens[i];
      total += o.ftx * -mean_logp;
      // Added on the sum's scale below: d(-mean)/d(sum) = -1/tokens, while dc is by score.
      out.d_chosen[i] += -o.ftx / p.chosen_tokens[i] / count;
    }
  for (std::size_t i = 0; i < n; ++i) {
    out.d_chosen[i] += dc[i] / count / (average ? p.chosen_tokens[i] : 1.0);
    out.d_rejected[i] = dr[i] / count / (average ? p.rejected_tokens[i] : 1.0);
  }
  // TRL's rpo_alpha: the NLL of the chosen answers' tokens, one mean over the micro-batch's.
  if (o.rpo_alpha) {
    double tokens = 0.0, logp = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      tokens += p.chosen_tokens[i];
      logp += p.chosen[i];
    }
    total += count * *o.rpo_alpha * (-logp / tokens);
    for (std::size_t i = 0; i < n; ++i) out.d_chosen[i] += -*o.rpo_alpha / tokens;
  }
  out.loss = total / count;
  out.chosen_rewards.resize(n);
  out.rejected_rewards.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.chosen_rewards[i] = b * (c[i] - rc[i]);
    out.rejected_rewards[i] = b * (r[i] - rr[i]);
  }
  return out;
}

}  // namespace zt::train
