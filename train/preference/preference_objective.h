// The loss of --stage dpo for the trainer: one micro-batch of pairs, packed [c0, r0, c1, r1, ...]
// into one forward, scored by the policy (and the reference), through a preference loss
// (preference_loss.h), with the head's gradients formed for backward
// (models/sequence_log_probs.h); and TRL's log keys over the pairs since the last log entry.
// The trainer's loop, accumulation, ZeRO engines and checkpoints are those of SFT: this only
// replaces the token loss.
#pragma once

#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "autograd/variable.h"
#include "models/batch.h"
#include "models/model.h"
#include "models/sequence_log_probs.h"
#include "train/data/batching.h"
#include "train/preference/preference_loss.h"

namespace zt::train {

// Where the reference's log-probabilities come from.
struct PreferenceReference {
  enum class Kind {
    kNone,           // orpo, simpo, reference_free: no reference
    kAdaptersOff,    // LoRA and P-Tuning: the policy with its adapters switched off
    kFrozenCopy,     // full and freeze: a frozen copy of the initial weights
    kInitialPolicy,  // full and freeze, precomputed: the policy itself before its first step
  };
  Kind kind = Kind::kNone;
  std::shared_ptr<const models::CausalLM> copy{};  // kFrozenCopy
  // TRL's precompute_ref_log_probs: every pair's reference log-probabilities once, before the
  // first step (kAdaptersOff or kInitialPolicy), kept and saved with checkpoints.
  bool precomputed = false;
};

struct PreferenceStep {
  // Its backward gives the gradients of `loss_sum` (times the grad_scale its head's gradients
  // were formed with, which the upstream gradient divides out, as the fused token loss's).
  autograd::Variable surrogate;
  double loss_sum = 0.0;  // the micro-batch's mean loss times its pairs
};

class PreferenceObjective {
 public:
  PreferenceObjective(PreferenceOptions options, PreferenceReference reference);

  // `pairs` is the micro-batch's pair count: its sequences / 2, or 0 for a filler batch (no
  // data, run for ZeRO's collectives), which adds nothing. With a precomputed reference,
  // `samples` are the batch's sample indices (PackedBatch::samples) into the data it was
  // precomputed for.
  PreferenceStep forward(models::CausalLM& policy, const models::PackedBatch& batch, std::size_t pairs,
                         double grad_scale, const std::vector<std::size_t>& samples = {});

  // precompute_ref_log_probs: whether the reference is read from a table, and whether the
  // table is there yet.
  bool precomputes() const { return reference_.precomputed; }
  bool has_precomputed() const { return !precomputed_.empty(); }
  // The reference's summed log-probabilities of every sample (pairs, chosen then rejected),
  // without gradients, pairs_per_batch pairs a forward; every rank computes all of them, in
  // step. Before the first step: under kInitialPolicy the policy is the reference only then.
  std::vector<double> precompute_reference(models::CausalLM& policy, const std::vector<TokenizedSample>& samples,
                                           std::int64_t pairs_per_batch, const BatchLayout& layout) const;
  // The tables of the training and evaluation samples, as set or as a checkpoint holds them.
  void set_precomputed(std::vector<double> train, std::vector<double> eval);
  nlohmann::json precomputed_json() const;
  // A checkpoint's tables, which must have one value per sample of this run's data (else the
  // data changed since they were computed, and zt::Error names `source`).
  void load_precomputed(const nlohmann::json& saved, std::size_t train_samples, std::size_t eval_samples,
                        const std::string& source);

  // TRL's keys (rewards/*, logps/*, logits/*; LLaMA-Factory's sft_loss and odds_ratio_loss for
  // orpo) over the pairs of every rank since the last call, which `sum` adds up; then starts
  // again. Every rank calls it at the same step.
  void log_metrics(nlohmann::json& entry, const std::function<double(double, const char*)>& sum);

  // The evaluation of `samples` (pairs, chosen then rejected) without gradients, pairs_per_batch
  // pairs a forward: the mean loss over the pairs as `eval_loss` (unrounded) and TRL's keys prefixed
  // `eval_`, as TRL logs an evaluation. Every rank evaluates every pair (in step, for ZeRO-3's
  // gathers), so nothing is summed over ranks.
  nlohmann::json evaluate(models::CausalLM& policy, const std::vector<TokenizedSample>& samples,
                          std::int64_t pairs_per_batch, const BatchLayout& layout) const;

  const PreferenceOptions& options() const { return options_; }

 private:
  struct Totals {
    double pairs = 0, chosen_rewards = 0, rejected_rewards = 0, accuracies = 0, chosen_logps = 0, rejected_logps = 0,
           chosen_logits = 0, chosen_logit_count = 0, rejected_logits = 0, rejected_logit_count = 0, sft_loss = 0,
           odds_ratio_loss = 0;
  };
  models::SequenceLogProbs reference_log_probs(models::CausalLM& policy, const models::PackedBatch& batch) const;
  void add_to_totals(const PreferenceLoss& loss, const models::SequenceLogProbs& policy, std::int64_t vocab);

  PreferenceOptions options_;
  PreferenceReference reference_;
  Totals totals_;
  std::vector<double> precomputed_, precomputed_eval_;  // per sample, when precomputed
};

}  // namespace zt::train
