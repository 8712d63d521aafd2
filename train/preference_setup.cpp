#include "train/preference_setup.h"

#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::train {

PreferenceOptions preference_options(const TrainingArguments& args) {
  const std::optional<PreferenceLossType> loss = preference_loss_from_name(args.pref_loss);
  ZT_REQUIRE(loss.has_value(), "--pref_loss " + args.pref_loss + " is not a preference loss zerotune runs");
  return {.loss = *loss,
          .beta = args.pref_beta,
          .label_smoothing = args.dpo_label_smoothing,
          .simpo_gamma = args.simpo_gamma,
          .ftx = args.pref_ftx,
          .rpo_alpha = args.rpo_alpha,
          .reference_free = args.reference_free};
}

std::vector<TokenizedSample> preference_samples(const PreferenceDataset& data, const std::string& source,
                                                const models::ChatTemplate& chat_template,
                                                const models::Tokenizer& tokenizer, const TrainingArguments& args) {
  const EncodeOptions options{.max_length = args.max_length,
                              .train_on_prompt = false,
                              .overlong = args.overlong_samples,
                              .workers = static_cast<int>(args.dataloader_num_workers)};
  EncodedPreferences encoded = encode_preferences(data, chat_template, tokenizer, options);
  if (encoded.truncated)
    ZT_LOG(kWarn, source << ": " << encoded.truncated << " pair(s) cut to --max_length " << args.max_length);
  if (encoded.skipped)
    ZT_LOG(kWarn, source << ": " << encoded.skipped
                         << " pair(s) left out: longer than --max_length (--overlong_samples skip) or an empty answer");
  ZT_REQUIRE(!encoded.pairs.empty(),
             source + ": no preference pair is left to learn from (check --max_length and --overlong_samples)");
  std::vector<TokenizedSample> samples;
  samples.reserve(2 * encoded.pairs.size());
  for (PreferenceSample& pair : encoded.pairs) {
    samples.push_back(std::move(pair.chosen));
    samples.push_back(std::move(pair.rejected));
  }
  return samples;
}

PreferenceReference preference_reference(const PreferenceOptions& options, const TrainingArguments& args,
                                         const std::function<std::shared_ptr<const models::CausalLM>()>& load_copy) {
  if (!uses_reference(options)) return {};
  const bool adapters =
      args.finetuning_type == FinetuningType::kLora || args.finetuning_type == FinetuningType::kPtuning;
  if (args.precompute_ref_log_probs)
    return {.kind = adapters ? PreferenceReference::Kind::kAdaptersOff : PreferenceReference::Kind::kInitialPolicy,
            .precomputed = true};
  if (adapters) return {.kind = PreferenceReference::Kind::kAdaptersOff};
  ZT_LOG(kInfo, "reference model: a frozen copy of the initial weights (--finetuning_type "
                    << name_of(args.finetuning_type) << "), " << preference_loss_name(options.loss) << " loss");
  return {.kind = PreferenceReference::Kind::kFrozenCopy, .copy = load_copy()};
}

void disable_lora_dropout(models::CausalLM& model, const TrainingArguments& args) {
  if (model.lora().empty()) return;
  if (args.lora_dropout > 0)
    ZT_LOG(kWarn, "--lora_dropout " << args.lora_dropout
                                    << " is not applied under --stage dpo: preference training runs without dropout, "
                                       "as TRL's and LLaMA-Factory's disable_dropout do");
  std::vector<models::LayerLora> lora = model.lora();
  for (models::LayerLora& layer : lora)
    for (auto& update : layer)
      if (update) update->dropout = 0.0;
  model.set_lora(std::move(lora));
}

std::shared_ptr<PreferenceObjective> make_preference_objective(
    const TrainingArguments& args, const std::function<std::shared_ptr<const models::CausalLM>()>& load_copy) {
  const PreferenceOptions options = preference_options(args);
  return std::make_shared<PreferenceObjective>(options, preference_reference(options, args, load_copy));
}

}  // namespace zt::train
