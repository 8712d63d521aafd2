// The preference losses of --stage dpo, as functions of the log-probabilities of one
// micro-batch's pairs: each returns the loss TRL's DPOTrainer and LLaMA-Factory's
// CustomDPOTrainer compute (the mean over the pairs, as their losses.mean()), its derivative
// by every summed log-probability, and the rewards they log. The model is not involved: the
// trainer feeds the derivatives back through the head (models/sequence_log_probs.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt::train {

// LLaMA-Factory's pref_loss (TRL's loss_type for the first four).
enum class PreferenceLossType { kSigmoid, kHinge, kIpo, kKtoPair, kOrpo, kSimpo };

std::string preference_loss_name(PreferenceLossType type);
// nullopt for a name zerotune does not run.
std::optional<PreferenceLossType> preference_loss_from_name(const std::string& name);

struct PreferenceOptions {
  PreferenceLossType loss = PreferenceLossType::kSigmoid;
  double beta = 0.1;                  // pref_beta / beta
  double label_smoothing = 0.0;       // dpo_label_smoothing / label_smoothing (sigmoid only)
  double simpo_gamma = 0.5;           // simpo
  double ftx = 0.0;                   // pref_ftx: LLaMA-Factory's SFT term, the chosen answer's mean token loss
  std::optional<double> rpo_alpha{};  // TRL's rpo_alpha: the chosen answers' token-mean NLL
  bool reference_free = false;        // TRL's reference_free: the reference's log-probabilities taken as 0
};

// ipo, orpo and simpo score an answer by its mean token log-probability, as LLaMA-Factory
// (and TRL for ipo) do; the others by the sum.
bool averages_log_probs(PreferenceLossType type);
// Whether the loss reads a reference model's log-probabilities.
bool uses_reference(const PreferenceOptions& options);

// One micro-batch's pairs, each vector one entry per pair.
struct PairLogProbs {
  std::vector<double> chosen, rejected;                // the policy's summed label log-probabilities
  std::vector<double> chosen_tokens, rejected_tokens;  // label tokens of each answer
  std::vector<double> ref_chosen, ref_rejected;        // the reference's sums; empty when not used
};

struct PreferenceLoss {
  double loss = 0.0;                         // mean over the pairs
  std::vector<double> d_chosen, d_rejected;  // d(loss)/d(summed log-probability) of each answer
  std::vector<double> chosen_rewards, rejected_rewards;
  std::vector<double> chosen_scores, rejected_scores;  // log-probabilities as the loss used them (logps/*)
  // orpo only, as LLaMA-Factory logs them (means over the pairs).
  std::optional<double> sft_loss{}, odds_ratio_loss{};
};

// Throws zt::Error for empty, mismatched or non-finite input, or an answer of no label token.
PreferenceLoss preference_loss(const PreferenceOptions& options, const PairLogProbs& pairs);

}  // namespace zt::train
