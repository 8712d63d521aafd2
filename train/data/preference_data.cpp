#include "train/data/preference_data.h"

#include <algorithm>
#include <optional>

#include "runtime/error.h"
#include "train/data/json_records.h"
#include "train/data/preference_layout.h"

namespace zt::train {
namespace {

using json = nlohmann::ordered_json;

PreferenceLayout detect(const json& record, const std::string& path) {
  if (std::optional<PreferenceLayout> layout = layout_of(record)) return *layout;
  fail(path + ": the first record " + record.dump().substr(0, 200) +
       " is no preference pair: --stage dpo reads records with \"chosen\" and \"rejected\" answers, in "
       "LLaMA-Factory's alpaca ranking (\"instruction\", \"input\", \"chosen\", \"rejected\"), its ShareGPT "
       "ranking (\"conversations\" with \"chosen\" and \"rejected\" messages), TRL's preference layout "
       "(\"prompt\", \"chosen\", \"rejected\") or OpenAI's (\"input\", \"preferred_output\", "
       "\"non_preferred_output\")");
}

// A file mixing layouts is refused: an odd record would otherwise fail with a message about a
// key the first record's layout has and it lacks.
void require_layout(const json& record, PreferenceLayout layout, const SampleSource& where) {
  ZT_REQUIRE(record.is_object(), where.str() + " is not a JSON object");
  const std::optional<PreferenceLayout> own = layout_of(record);
  if (own == layout) return;
  // An explicit TRL prompt of another kind than the answers is TRL's implicit prompt too.
  const bool trl = [](std::optional<PreferenceLayout> l) {
    return l == PreferenceLayout::kTrlExplicit || l == PreferenceLayout::kTrlImplicit;
  }(own) && (layout == PreferenceLayout::kTrlExplicit || layout == PreferenceLayout::kTrlImplicit);
  if (trl) return;
  fail(where.str() +
       (own ? " is in " + layout_name(*own) : std::string(" has no \"chosen\" and \"rejected\" answers")) +
       " but the file's first record is in " + layout_name(layout) +
       "; a file holds one layout: split it into one file per layout, or fix the record");
}

bool same_answer(const models::ChatMessage& a, const models::ChatMessage& b) {
  if (a.content != b.content || a.tool_calls.size() != b.tool_calls.size()) return false;
  for (std::size_t i = 0; i < a.tool_calls.size(); ++i)
    if (a.tool_calls[i].name != b.tool_calls[i].name || a.tool_calls[i].arguments != b.tool_calls[i].arguments)
      return false;
  return true;
}

}  // namespace

PreferenceDataset parse_preference_dataset(std::string_view text, const std::string& path,
                                           const std::optional<EntryColumns>& columns) {
  const std::vector<JsonRecord> records = read_json_records(text, path);
  ZT_REQUIRE(!records.empty(), path + " holds no preference records");
  refuse_media(records, path);
  // The entry's columns say where everything is; without them the first record's keys do.
  std::optional<PreferenceLayout> layout;
  if (!columns) layout = detect(records.front().value, path);
  PreferenceDataset data;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const SampleSource where{path, i, records[i].line};
    const json& record = records[i].value;
    if (layout) require_layout(record, *layout, where);
    data.pairs.push_back(layout ? preference_of(record, *layout, where) : preference_of(record, *columns, where));
  }
  return data;
}

PreferenceDataset load_preference_dataset(const std::string& path, const std::optional<EntryColumns>& columns) {
  return parse_preference_dataset(read_data_file(path), path, columns);
}

std::string identical_pairs_note(const std::string& source, const PreferenceDataset& data) {
  const auto identical = std::count_if(data.pairs.begin(), data.pairs.end(), [](const PreferenceConversation& pair) {
    return same_answer(pair.chosen, pair.rejected);
  });
  if (identical == 0) return "";
  return source + ": " + std::to_string(identical) + " of " + std::to_string(data.pairs.size()) +
         " pairs have the same chosen and rejected answer; the preference loss learns nothing from them (their "
         "reward margin is 0 whatever the model does): drop them, or check how the pairs were made";
}

}  // namespace zt::train
