// Preference data (--stage dpo): records of a prompt and two answers to it, the one people
// preferred (`chosen`) and the other (`rejected`), as users have them:
//   - LLaMA-Factory's alpaca ranking: `instruction`, `input`, `chosen`, `rejected` (strings),
//     optional `system` and `history`;
//   - LLaMA-Factory's ShareGPT ranking: `conversations` (or OpenAI's `messages`) holding the
//     prompt's turns, `chosen` and `rejected` each one message;
//   - TRL's preference layout: `prompt`, `chosen`, `rejected` as strings (standard) or as lists
//     of messages (conversational), or only `chosen` and `rejected` as whole conversations that
//     share the prompt (TRL's implicit prompt).
// One JSON array or JSON Lines file; the layout is detected from the first record's keys, as
// load_dataset does for SFT data. Each pair is encoded through the chat template as SFT
// samples are, so the trainer packs and runs chosen and rejected like any other sample.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template/chat_template.h"
#include "train/data/batching.h"
#include "train/data/dataset.h"
#include "train/data/entry_columns.h"
#include "train/data/sample_encoding.h"

namespace zt::train {

// One preference record: the conversation up to the answer, and the two answers.
struct PreferenceConversation {
  Conversation prompt;           // system?, user, (assistant, user)* -- ends on a user/tool turn
  models::ChatMessage chosen;    // role assistant
  models::ChatMessage rejected;  // role assistant
};

struct PreferenceDataset {
  std::vector<PreferenceConversation> pairs;
};

// Reads a preference file in any supported layout (detected from the first record's keys, like
// load_dataset); errors name the file, the record's index (and line for JSON Lines) and what to
// do. With `columns` (a dataset_info.json entry's, entry_columns.h) the records are read
// through them, as LLaMA-Factory reads that entry, instead.
PreferenceDataset load_preference_dataset(const std::string& path,
                                          const std::optional<EntryColumns>& columns = std::nullopt);
PreferenceDataset parse_preference_dataset(std::string_view text, const std::string& path,
                                           const std::optional<EntryColumns>& columns = std::nullopt);

// Pairs whose two answers are the same are read (a data set may hold a few), but the
// preference loss learns nothing from them: their reward margin is 0 whatever the model does.
// The warning that says how many `source` holds; empty when it holds none.
std::string identical_pairs_note(const std::string& source, const PreferenceDataset& data);

// One encoded pair: each side is the prompt's tokens then that answer's tokens through the
// chat template; labels are kIgnoreIndex on the prompt and the ids on the answer (its
// end-of-turn token included), not shifted -- exactly the TokenizedSample SFT uses, so pack()
// can lay [c0, r0, c1, r1, ...] into one forward.
struct PreferenceSample {
  TokenizedSample chosen;
  TokenizedSample rejected;
};

struct EncodedPreferences {
  std::vector<PreferenceSample> pairs;
  std::size_t truncated = 0;  // pairs cut to max_length
  // Pairs left out: over max_length with Overlong::kSkip, or an answer with no label left to
  // learn from (empty answers are refused when the file is read).
  std::size_t skipped = 0;
};

// The pairs through `chat_template`, cut to options.max_length as LLaMA-Factory's pairwise
// processor cuts them (the prompt and the longer answer share the length by infer_seqlen),
// on options.workers threads as encode_dataset does. options.train_on_prompt is not used:
// preference training scores the answers only.
EncodedPreferences encode_preferences(const PreferenceDataset& data, const models::ChatTemplate& chat_template,
                                      const models::Tokenizer& tokenizer, const EncodeOptions& options);

}  // namespace zt::train
