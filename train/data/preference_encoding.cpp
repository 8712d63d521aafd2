// encode_preferences (preference_data.h): the prompt with its generation prompt, then each
// answer as SFT encodes the conversation it ends, cut as LLaMA-Factory's pairwise processor
// cuts a pair.
#include <algorithm>
#include <iterator>
#include <optional>

#include "runtime/error.h"
#include "train/data/preference_data.h"
#include "train/data/sample_truncation.h"

namespace zt::train {
namespace {

// `answer` as the template renders an assistant's last turn, with the labels SFT gives it:
// the last run of trained tokens of the conversation that it ends, to the end (the template's
// end of turn, and the final eos of an efficient-eos template, included).
TokenizedSample answer_tokens(const PreferenceConversation& pair, const models::ChatMessage& answer,
                              const EncodeSettings& settings) {
  Conversation conversation = pair.prompt;
  conversation.messages.push_back(answer);
  const EncodedChatSample whole = encode_chat_sample(conversation, settings.chat_template, settings.tokenizer, false);
  const std::size_t begin = whole.turns.empty() ? whole.sample.ids.size() : whole.turns.back().reply_begin;
  const auto from = static_cast<std::ptrdiff_t>(begin);
  return {{whole.sample.ids.begin() + from, whole.sample.ids.end()},
          {whole.sample.labels.begin() + from, whole.sample.labels.end()}};
}

std::vector<models::TokenId> encode_prompt(const Conversation& prompt, const EncodeSettings& settings) {
  try {
    return settings.chat_template.encode(settings.tokenizer, prompt.messages, true, prompt.tools).ids;
  } catch (const Error& e) {
    fail(prompt.source + ": " + e.what());
  }
}

// The first `prompt_kept` prompt tokens, untrained, then the first `answer_kept` of `answer`.
TokenizedSample side_of(const std::vector<models::TokenId>& prompt, std::size_t prompt_kept,
                        const TokenizedSample& answer, std::size_t answer_kept) {
  const auto kept = [](const auto& v, std::size_t n) {
    return v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size()));
  };
  TokenizedSample side;
  side.ids.assign(prompt.begin(), kept(prompt, prompt_kept));
  side.ids.insert(side.ids.end(), answer.ids.begin(), kept(answer.ids, answer_kept));
  side.labels.assign(side.ids.size() - std::min(answer_kept, answer.ids.size()), kIgnoreIndex);
  side.labels.insert(side.labels.end(), answer.labels.begin(), kept(answer.labels, answer_kept));
  return side;
}

// Whether a side has a label to learn from: labels shift by one, so one after the first token.
bool learns(const TokenizedSample& side) {
  return std::any_of(side.labels.begin() + std::min<std::ptrdiff_t>(1, static_cast<std::ptrdiff_t>(side.labels.size())),
                     side.labels.end(), [](std::int32_t label) { return label != kIgnoreIndex; });
}

// One pair; nullopt when it is skipped (over max_length under Overlong::kSkip, or an answer
// left with nothing to learn).
std::optional<PreferenceSample> encode_pair(const PreferenceConversation& pair, const EncodeSettings& settings,
                                            EncodedPreferences& out) {
  // As LLaMA-Factory's pairwise processor builds a pair: the prompt with its generation prompt
  // (earlier answers as the template renders them in a prompt), then each answer.
  const std::vector<models::TokenId> prompt_ids = encode_prompt(pair.prompt, settings);
  const TokenizedSample chosen = answer_tokens(pair, pair.chosen, settings);
  const TokenizedSample rejected = answer_tokens(pair, pair.rejected, settings);
  const std::size_t prompt = prompt_ids.size();
  const std::size_t chosen_length = chosen.ids.size(), rejected_length = rejected.ids.size();
  const std::size_t longer = std::max(chosen_length, rejected_length);
  const auto max_length = static_cast<std::size_t>(settings.options.max_length);
  TurnLengths kept{prompt, longer};
  if (prompt + longer > max_length) {
    if (settings.options.overlong == Overlong::kSkip) {
      ++out.skipped;
      return std::nullopt;
    }
    // LLaMA-Factory's pairwise processor: the prompt and the longer answer share max_length
    // by infer_seqlen; both answers keep that many tokens.
    kept = turn_lengths_within(prompt, longer, max_length);
    ++out.truncated;
  }
  PreferenceSample sample{side_of(prompt_ids, kept.prompt, chosen, kept.reply),
                          side_of(prompt_ids, kept.prompt, rejected, kept.reply)};
  if (!learns(sample.chosen) || !learns(sample.rejected)) {
    ++out.skipped;
    return std::nullopt;
  }
  return sample;
}

}  // namespace

EncodedPreferences encode_preferences(const PreferenceDataset& data, const models::ChatTemplate& chat_template,
                                      const models::Tokenizer& tokenizer, const EncodeOptions& options) {
  ZT_REQUIRE(options.max_length > 1,
             "encode_preferences: max_length is " + std::to_string(options.max_length) + "; it must be > 1");
  const EncodeSettings settings{chat_template, tokenizer, options};
  const std::size_t count = data.pairs.size();
  std::vector<EncodedPreferences> results(encoding_parts(count, options.workers));
  run_in_parts(count, results.size(), [&](std::size_t part, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      if (std::optional<PreferenceSample> sample = encode_pair(data.pairs[i], settings, results[part]))
        results[part].pairs.push_back(std::move(*sample));
  });
  EncodedPreferences out;
  for (EncodedPreferences& part : results) {
    out.truncated += part.truncated;
    out.skipped += part.skipped;
    std::move(part.pairs.begin(), part.pairs.end(), std::back_inserter(out.pairs));
  }
  return out;
}

}  // namespace zt::train
