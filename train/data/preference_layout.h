// The layouts of preference records (see preference_data.h) and how one record becomes a
// PreferenceConversation. A record is rewritten into the SFT reader's alpaca or ShareGPT
// sample (chat_sample.h) with the answer as its last turn, so the turns, roles, tool calls and
// content parts are read and checked by the one reader SFT data goes through.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "train/data/chat_sample.h"
#include "train/data/entry_columns.h"
#include "train/data/preference_data.h"

namespace zt::train {

enum class PreferenceLayout {
  kAlpacaRanking,    // LLaMA-Factory: instruction, input, chosen, rejected (strings), system, history
  kShareGptRanking,  // LLaMA-Factory: conversations / messages, chosen and rejected one message each
  kTrlExplicit,      // TRL: prompt, chosen, rejected, strings or lists of messages
  kTrlImplicit,      // TRL: chosen and rejected only, whole conversations sharing the prompt
  kOpenAi,           // OpenAI's (and Together's) preference fine-tuning: input, preferred_output, non_preferred_output
};

// "LLaMA-Factory's alpaca ranking (\"instruction\", \"chosen\", \"rejected\")" and the like.
std::string layout_name(PreferenceLayout layout);

// The layout a record's keys name (a `messages` key is TRL's other column where the answers
// are lists of messages); nullopt when it holds no "chosen" and "rejected" (nor OpenAI's
// "preferred_output" and "non_preferred_output").
std::optional<PreferenceLayout> layout_of(const nlohmann::ordered_json& record);

// One record read in `layout`, or through `columns` when a dataset_info.json entry gives them.
PreferenceConversation preference_of(const nlohmann::ordered_json& record, PreferenceLayout layout,
                                     const SampleSource& where);
PreferenceConversation preference_of(const nlohmann::ordered_json& record, const EntryColumns& columns,
                                     const SampleSource& where);

}  // namespace zt::train
