// What --stage dpo adds to a training job (train/training_job.cpp): the loss options from the
// arguments (LLaMA-Factory's and TRL's names), the encoded pairs as the trainer's samples
// (chosen then rejected), and the reference model the loss needs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/model.h"
#include "train/args/training_arguments.h"
#include "train/data/preference_data.h"
#include "train/preference/preference_objective.h"

namespace zt::train {

PreferenceOptions preference_options(const TrainingArguments& args);

// The pairs through the chat template, cut to --max_length, as [c0, r0, c1, r1, ...]; what was
// cut or left out is logged under `source`'s name. No pair left is an error.
std::vector<TokenizedSample> preference_samples(const PreferenceDataset& data, const std::string& source,
                                                const models::ChatTemplate& chat_template,
                                                const models::Tokenizer& tokenizer, const TrainingArguments& args);

// The reference for `options`: none (orpo, simpo, reference_free), the policy with its adapter
// off (LoRA, P-Tuning), or a frozen copy of the initial weights made by `load_copy` (full and
// freeze; under ZeRO-3 the caller's `load_copy` partitions it like the policy,
// train/zero/zero3_frozen_copy.h). With
// precompute_ref_log_probs the adapter-off policy or the initial policy is scored once, before
// the first step, and no copy is made.
PreferenceReference preference_reference(const PreferenceOptions& options, const TrainingArguments& args,
                                         const std::function<std::shared_ptr<const models::CausalLM>()>& load_copy);

// Preference training runs without dropout, as TRL's and LLaMA-Factory's disable_dropout do:
// LoRA's dropout is set to 0 (with a warning when it was asked for).
void disable_lora_dropout(models::CausalLM& model, const TrainingArguments& args);

// The objective the trainer runs for --stage dpo.
std::shared_ptr<PreferenceObjective> make_preference_objective(
    const TrainingArguments& args, const std::function<std::shared_ptr<const models::CausalLM>()>& load_copy);

}  // namespace zt::train
