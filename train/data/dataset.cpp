#include "train/data/dataset.h"

#include <optional>

#include "runtime/enum_names.h"
#include "runtime/error.h"
#include "train/data/chat_sample.h"
#include "train/data/entry_columns.h"
#include "train/data/json_records.h"
#include "train/data/preference_layout.h"

namespace zt::train {
namespace {

using json = nlohmann::ordered_json;

// Each format with the keys that name it, for messages.
constexpr EnumName<DataFormat> kFormatNames[] = {
    {DataFormat::kAlpaca, "alpaca (\"instruction\")"},
    {DataFormat::kShareGpt, "ShareGPT (\"conversations\" or \"messages\")"},
    {DataFormat::kText, "plain text (\"text\")"}};

std::optional<DataFormat> format_of(const json& sample) {
  if (!sample.is_object()) return std::nullopt;
  if (sample.contains("instruction")) return DataFormat::kAlpaca;
  if (sample.contains("conversations") || sample.contains("messages")) return DataFormat::kShareGpt;
  if (sample.contains("text")) return DataFormat::kText;
  return std::nullopt;
}

DataFormat detect(const json& sample, const std::string& path) {
  // Preference pairs in any layout --stage dpo reads (preference_layout.h says which).
  if (const std::optional<PreferenceLayout> pairs = layout_of(sample)) {
    const bool openai = *pairs == PreferenceLayout::kOpenAi;
    fail(path + " holds preference pairs" +
         (openai ? " in OpenAI's layout (\"preferred_output\" and \"non_preferred_output\")"
                 : " (\"chosen\" and \"rejected\")") +
         ", which --stage dpo trains on; supervised fine-tuning reads one answer per sample " +
         (openai ? "(\"messages\" ending on the assistant's turn)" : "(\"output\", or the last assistant turn)"));
  }
  // KTO data (LLaMA-Factory's kto_en_demo, TRL's unpaired preference layout) marks every answer
  // desirable or not with a boolean "label"; read as SFT data it would train on the undesirable
  // answers as well, so it is refused rather than read without the label.
  ZT_REQUIRE(!(sample.is_object() && sample.contains("label") && sample["label"].is_boolean()),
             path +
                 " holds KTO data: the first sample's boolean \"label\" marks its answer desirable (true) or "
                 "not (false), and zerotune does not train KTO; supervised fine-tuning would train on the "
                 "undesirable answers too. Keep the samples labelled true and drop the key to fine-tune on "
                 "them, or pair answers as \"chosen\" and \"rejected\" for --stage dpo");
  if (std::optional<DataFormat> format = format_of(sample)) return *format;
  // TRL's prompt-completion layout: its SFT trainer writes a text prompt without a chat template,
  // which the formats here do not, so it is named with the layouts that carry it over.
  const bool prompt_completion = sample.is_object() && sample.contains("prompt") && sample.contains("completion");
  fail(path + ": cannot tell the data format from the first sample " + sample.dump().substr(0, 200) +
       "; expected alpaca (\"instruction\", \"input\", \"output\"), ShareGPT (\"conversations\" or "
       "\"messages\") or plain text (\"text\")" +
       (prompt_completion ? std::string("; TRL's prompt-completion layout is not read: write its prompt as "
                                        "\"instruction\" and its completion as \"output\" (through the chat "
                                        "template), or join both into \"text\" (no template, every token trained)")
                          : std::string()));
}

// A file mixing formats is refused: the first odd sample would otherwise be read as the
// first sample's format and fail with a message about a missing field.
void require_format(const json& sample, DataFormat format, const SampleSource& where) {
  const std::optional<DataFormat> own = format_of(sample);
  if (own == format) return;
  fail(where.str() + (own ? " is " + format_name(*own) : std::string(" has none of the keys that name a format")) +
       " but the file's first sample is " + format_name(format) +
       "; a file holds one format: split it into one file per format");
}

// A .txt file's lines as the datasets library's text loader gives them to LLaMA-Factory (its
// wiki_demo.txt): every line a text, empty ones too, without its line break (\n, \r\n or \r).
Dataset text_lines(std::string_view text, const std::string& path) {
  Dataset dataset;
  dataset.format = DataFormat::kText;
  while (!text.empty()) {
    const std::size_t end = text.find_first_of("\r\n");
    dataset.texts.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + (text.substr(end, 2) == "\r\n" ? 2 : 1));
  }
  ZT_REQUIRE(!dataset.texts.empty(), path + " holds no text");
  return dataset;
}

// The sample without the keys in `unread`, each counted where it held a value.
json without_unread(const json& sample, Dataset& dataset) {
  json kept = sample;
  for (auto& [key, count] : dataset.unread) {
    if (!kept.contains(key)) continue;
    const json& value = kept[key];
    count += !(value.is_null() || (value.is_string() && value.get<std::string>().empty()) ||
               (value.is_array() && value.empty()));
    kept.erase(key);
  }
  return kept;
}

}  // namespace

std::string format_name(DataFormat format) { return name_of(kFormatNames, format, ""); }

Dataset parse_dataset(std::string_view text, const std::string& path, const std::vector<std::string>& unread_keys,
                      const EntryColumns* columns) {
  if (path.ends_with(".txt")) return text_lines(text, path);
  const std::vector<JsonRecord> samples = read_json_records(text, path);
  ZT_REQUIRE(!samples.empty(), path + " holds no samples");
  refuse_media(samples, path);
  Dataset dataset;
  for (const std::string& key : unread_keys) dataset.unread.emplace_back(key, 0);
  // An entry's columns give the format; its records are rewritten into the keys detected here.
  dataset.format = !columns            ? detect(samples.front().value, path)
                   : columns->sharegpt ? DataFormat::kShareGpt
                                       : DataFormat::kAlpaca;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleSource where{path, i, samples[i].line};
    ZT_REQUIRE(samples[i].value.is_object(), where.str() + " is not a JSON object");
    json kept;  // a copy only where keys are left unread or renamed
    const json* sample = &samples[i].value;
    if (!dataset.unread.empty()) sample = &(kept = without_unread(*sample, dataset));
    if (columns) sample = &(kept = renamed_sample(*sample, *columns, where));
    require_format(*sample, dataset.format, where);
    if (dataset.format == DataFormat::kText)
      dataset.texts.push_back(text_field(*sample, "text", where, true));
    else
      dataset.samples.push_back(dataset.format == DataFormat::kAlpaca ? from_alpaca(*sample, where)
                                                                      : from_sharegpt(*sample, where));
  }
  return dataset;
}

Dataset load_dataset(const std::string& path, const std::vector<std::string>& unread_keys,
                     const EntryColumns* columns) {
  return parse_dataset(read_data_file(path), path, unread_keys, columns);
}

}  // namespace zt::train
