#include "train/args/dataset_selection.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "runtime/error.h"
#include "runtime/json_text.h"
#include "runtime/log.h"
#include "runtime/terminal/text_list.h"
#include "runtime/user_paths.h"
#include "train/data/clm_texts.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Whether `path` is a file; a path that cannot be looked at is not (the read says why).
bool is_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

// The columns (and for sharegpt the tags) zerotune's reader knows, by LLaMA-Factory's keys, and
// the names it detects them by. Under --stage pt the text is the prompt column, and zerotune
// reads it as "text".
const json& known_layout(const std::string& formatting, bool pretraining) {
  static const json text = {{"columns", {{"prompt", {"text"}}}}};
  if (pretraining) return text;
  static const json alpaca = {{"columns",
                               {{"prompt", {"instruction"}},
                                {"query", {"input"}},
                                {"response", {"output"}},
                                {"system", {"system"}},
                                {"history", {"history"}},
                                {"tools", {"tools"}}}}};
  static const json sharegpt = {
      {"columns", {{"messages", {"conversations", "messages"}}, {"system", {"system"}}, {"tools", {"tools"}}}},
      {"tags",
       {{"role_tag", {"from", "role"}},
        {"content_tag", {"value", "content"}},
        {"user_tag", {"human", "user"}},
        {"assistant_tag", {"gpt", "assistant"}},
        {"observation_tag", {"observation", "tool"}},
        {"function_tag", {"function_call"}},
        {"system_tag", {"system"}}}}};
  return formatting == "sharegpt" ? sharegpt : alpaca;
}

// Columns that make an entry data of a kind zerotune does not train on: what it is, and what to
// do; empty for the others.
std::string kind_refused(const std::string& key, const json& value, bool pretraining) {
  if (key == "kto_tag")
    return " is KTO data (its kto_tag column marks each answer desirable or not), which LLaMA-Factory's stage kto "
           "trains on and zerotune does not: name a dataset of instructions and answers, or preference pairs "
           "(\"ranking\": true) with --stage dpo";
  if (key == "images" || key == "videos" || key == "audios")
    return " is multimodal data (its " + key + " column); zerotune trains on text only: name a text dataset";
  if (key == "prompt" && value == "text" && !pretraining)
    return " is plain text (its prompt column is \"text\"), which --stage pt trains on; this run's --stage is sft: "
           "train it with --stage pt, or name a dataset of instructions and answers";
  return "";
}

// Whether an entry's columns or tags rename what zerotune's reader detects: another key, or a
// role under another name. Each must be one LLaMA-Factory reads for the formatting; under
// --stage pt the text must be "text".
bool check_layout(const json& entry, const std::string& formatting, bool pretraining, const char* part,
                  const std::string& where) {
  if (!entry.contains(part)) return false;
  ZT_REQUIRE(entry[part].is_object(), where + ": \"" + part + "\" must be an object");
  const json& known = known_layout(formatting, pretraining).value(part, json::object());
  const bool tags = std::string_view(part) == "tags";
  bool renames = false;
  for (const auto& [key, value] : entry[part].items()) {
    const std::string refused = tags ? "" : kind_refused(key, value, pretraining);
    ZT_REQUIRE(refused.empty(), where + refused);
    ZT_REQUIRE(known.contains(key), where + " maps " + part + " " + key + "; zerotune reads " + formatting +
                                        " data with no " + key + ": drop it from the entry's \"" + part + "\"");
    ZT_REQUIRE(value.is_string() || value.is_null(),
               where + ": " + part + " " + key + " must name a key of the records (a string), got " + value.dump());
    const bool detected = std::find(known[key].begin(), known[key].end(), value) != known[key].end();
    ZT_REQUIRE(detected || !pretraining, where + " maps " + part + " " + key + " to " + value.dump() +
                                             "; --stage pt reads the text as " + known[key].dump() +
                                             ": rename the key in the data file and drop the entry's \"" + part + "\"");
    renames = renames || !detected;
  }
  return renames;
}

// Whether one of the entry's columns names `key` of the records.
bool names_key(const json& columns, const std::string& key) {
  return std::any_of(columns.begin(), columns.end(), [&](const json& value) { return value == key; });
}

// The keys of an entry's records that LLaMA-Factory does not read: its parser sets every column
// from "columns", unlisted ones to None, and system, history and tools are None by default.
// Columns that are the records' text are required where the entry lists columns. A key another
// column names is read as that column.
std::vector<std::string> unread_keys(const json& entry, const std::string& formatting, const std::string& where) {
  const json columns = entry.value("columns", json::object());
  const bool sharegpt = formatting == "sharegpt";
  if (entry.contains("columns"))
    for (const char* needed : sharegpt ? std::vector<const char*>{"messages"} : std::vector{"prompt", "response"})
      ZT_REQUIRE(columns.contains(needed) && !columns[needed].is_null(),
                 where + "'s columns do not list " + needed + ", so LLaMA-Factory reads no " + needed +
                     " from its records: add it to the entry's \"columns\"");
  std::vector<std::string> unread;
  const std::pair<const char*, const char*> optional[] = {
      {"system", "system"}, {"tools", "tools"}, {"history", "history"}, {"query", "input"}};
  for (const auto& [column, key] : optional) {
    const bool alpaca_only = std::string_view(column) == "history" || std::string_view(column) == "query";
    if (sharegpt && alpaca_only) continue;
    const bool listed = columns.contains(column) && !columns[column].is_null();
    const bool read = listed || (std::string_view(column) == "query" && !entry.contains("columns"));
    if (!read && !names_key(columns, key)) unread.emplace_back(key);
  }
  return unread;
}

// A dataset_info.json entry as a file zerotune reads the way LLaMA-Factory would, with the
// columns of a ranking entry, or of another that renames keys or tags. Ranking data is what
// --stage dpo trains on, and only it.
PreferenceFile entry_file(const std::string& name, const json& entry, const fs::path& dataset_dir, const fs::path& info,
                          const std::string& stage) {
  const std::string where = info.string() + ": dataset \"" + name + "\"";
  const bool pretraining = stage == "pt";
  ZT_REQUIRE(entry.is_object(), where + " is not an object");
  // LLaMA-Factory loads an entry with a remote source from there, passing over a file_name beside it.
  const bool has_file = entry.contains("file_name") && entry["file_name"].is_string();
  for (const char* remote : {"hf_hub_url", "ms_hub_url", "om_hub_url", "script_url", "cloud_file_name"})
    ZT_REQUIRE(
        !entry.contains(remote),
        where + " is loaded from " + remote +
            (has_file ? ", which LLaMA-Factory takes over its file_name " + entry["file_name"].dump() +
                            "; zerotune reads local files: drop " + remote + " from the entry to read the local file"
                      : std::string("; zerotune reads local files: download it and name its file_name")));
  ZT_REQUIRE(entry.contains("file_name") && entry["file_name"].is_string(), where + " has no file_name");
  // Python takes any non-empty string for true, "false" too: only a JSON boolean says one thing.
  ZT_REQUIRE(!entry.contains("ranking") || entry["ranking"].is_boolean(),
             where + " has \"ranking\": " + entry["ranking"].dump() +
                 ", which is not a JSON boolean (LLaMA-Factory would take any non-empty text for true): write "
                 "\"ranking\": true for preference pairs, or false");
  const bool ranking = entry.value("ranking", false);
  ZT_REQUIRE(!ranking || stage == "dpo", where +
                                             " is preference (ranking) data, which --stage dpo trains on; this run's "
                                             "--stage is " +
                                             stage +
                                             ": name a dataset of instructions and answers, or train with "
                                             "--stage dpo");
  ZT_REQUIRE(ranking || stage != "dpo",
             where +
                 " is not preference data (its entry has no \"ranking\": true); --stage dpo trains on pairs of "
                 "a chosen and a rejected answer: name a ranking dataset, or add \"ranking\": true to the entry "
                 "if its records hold \"chosen\" and \"rejected\"");
  ZT_REQUIRE(!entry.contains("num_samples"), where +
                                                 " samples num_samples of the file, which zerotune does not; "
                                                 "cut the file, or use --max_samples for its first samples");
  // LLaMA-Factory loads a local file as the datasets library's one "train" split and takes the
  // entry's split of it: a slice ("train[:1000]") keeps part of the file, another split fails.
  const json split = entry.value("split", json("train"));
  ZT_REQUIRE(split == "train", where + " takes split " + split.dump() +
                                   " of its file, which LLaMA-Factory loads as the one \"train\" split; zerotune "
                                   "reads the whole file: cut the file (or use --max_samples for the first samples "
                                   "of each dataset) and drop \"split\"");
  const json formatting_value = entry.contains("formatting") ? entry["formatting"] : json("alpaca");
  const std::string formatting =
      formatting_value.is_string() ? formatting_value.get<std::string>() : formatting_value.dump();
  ZT_REQUIRE(formatting == "alpaca" || formatting == "sharegpt",
             where + " has formatting \"" + formatting + "\"; zerotune reads alpaca and sharegpt");
  ZT_REQUIRE(!pretraining || formatting == "alpaca",
             where + " has formatting \"" + formatting + "\"; --stage pt reads plain text, alpaca-formatted");
  PreferenceFile file;
  if (ranking) {
    file.columns = ranking_columns(entry, where);  // honoured, as LLaMA-Factory reads them
  } else {
    const bool renamed_columns = check_layout(entry, formatting, pretraining, "columns", where);
    const bool renamed_tags = check_layout(entry, formatting, pretraining, "tags", where);
    if (!pretraining) file.unread_keys = unread_keys(entry, formatting, where);
    // Others are read as a file named directly is, their layout detected.
    if (renamed_columns || renamed_tags) file.columns = supervised_columns(entry, where);
  }
  const fs::path path = dataset_dir / entry["file_name"].get<std::string>();
  std::error_code error;
  ZT_REQUIRE(!fs::is_directory(path, error),
             where + ": " + path.string() +
                 " is a folder, whose files LLaMA-Factory reads as one dataset; zerotune reads one file per entry: "
                 "name the files in --dataset, comma-separated, or give each an entry of its own");
  ZT_REQUIRE(is_file(path),
             where + ": " + path.string() + " is not a file (zerotune reads one JSON or JSON Lines file per dataset)");
  file.path = path.string();
  return file;
}

json read_dataset_info(const fs::path& info) {
  std::error_code absent;
  if (!fs::exists(info, absent)) return json::object();
  require_readable_file(info.string(), "LLaMA-Factory's dataset list");
  std::ifstream in(info, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json parsed = parse_json(text, info.string());
  ZT_REQUIRE(parsed.is_object(), info.string() + " is not a JSON object of dataset names");
  return parsed;
}

// A warning for each key LLaMA-Factory left unread in a file's samples, as zerotune did.
void warn_unread(const std::string& path, const Dataset& data) {
  for (const auto& [key, count] : data.unread)
    if (count > 0)
      ZT_LOG(kWarn, path + ": " + std::to_string(count) + " sample(s) have \"" + key +
                        "\", which their dataset_info.json entry's columns do not list; LLaMA-Factory does not read "
                        "it, nor does zerotune: to train on it, add it to the entry's \"columns\" (" +
                        (key == "input" ? "\"query\": \"input\"" : "\"" + key + "\": \"" + key + "\"") + ")");
}

// Every file cut to its first max_samples samples, then concatenated.
Dataset read_files(const std::vector<PreferenceFile>& entries, const std::optional<std::int64_t>& max_samples) {
  Dataset all;
  std::vector<std::string> files;
  for (const PreferenceFile& entry : entries) files.push_back(entry.path);
  for (std::size_t i = 0; i < files.size(); ++i) {
    require_readable_file(files[i], "data file");
    Dataset data = load_dataset(files[i], entries[i].unread_keys, entries[i].columns ? &*entries[i].columns : nullptr);
    warn_unread(files[i], data);
    if (max_samples) {
      const auto keep = static_cast<std::size_t>(*max_samples);
      if (data.samples.size() > keep) data.samples.resize(keep);
      if (data.texts.size() > keep) data.texts.resize(keep);
    }
    if (i == 0) {
      all = std::move(data);
      continue;
    }
    ZT_REQUIRE((all.format == DataFormat::kText) == (data.format == DataFormat::kText),
               files[i] + " and " + files[0] + " mix plain text and conversations; train on one kind per run");
    all.samples.insert(all.samples.end(), data.samples.begin(), data.samples.end());
    all.texts.insert(all.texts.end(), data.texts.begin(), data.texts.end());
  }
  return all;
}

Dataset subset(const Dataset& data, const std::vector<std::size_t>& indices) {
  Dataset part;
  part.format = data.format;
  for (std::size_t i : indices) {
    if (data.format == DataFormat::kText)
      part.texts.push_back(data.texts[i]);
    else
      part.samples.push_back(data.samples[i]);
  }
  return part;
}

// LLaMA-Factory's comma-separated dataset names as files, for `stage`.
std::vector<PreferenceFile> named_files(const std::string& names, const std::string& dataset_dir,
                                        const std::string& stage) {
  const fs::path info_path = fs::path(dataset_dir) / "dataset_info.json";
  const json info = read_dataset_info(info_path);
  std::vector<PreferenceFile> files;
  for (const std::string& name : split_comma_list(names)) {
    if (info.contains(name)) {
      files.push_back(entry_file(name, info[name], dataset_dir, info_path, stage));
    } else if (is_file(name)) {
      files.push_back({name});
    } else if (is_file(fs::path(dataset_dir) / name)) {
      files.push_back({(fs::path(dataset_dir) / name).string()});
    } else {
      std::vector<std::string> known;
      for (const auto& [key, entry] : info.items()) known.push_back(key);
      fail("dataset \"" + name + "\" is neither in " + info_path.string() +
           (known.empty() ? std::string(" (missing or empty)") : " (which has " + join_list(known) + ")") +
           " nor a file; check --dataset_dir, or name the file");
    }
  }
  ZT_REQUIRE(!files.empty(), "--dataset names no dataset");
  return files;
}

// Every preference file cut to its first max_samples pairs, then concatenated.
PreferenceDataset read_preference_files(const std::vector<PreferenceFile>& files,
                                        const std::optional<std::int64_t>& max_samples) {
  PreferenceDataset all;
  for (const PreferenceFile& file : files) {
    require_readable_file(file.path, "data file");
    PreferenceDataset data = load_preference_dataset(file.path, file.columns);
    if (max_samples && data.pairs.size() > static_cast<std::size_t>(*max_samples))
      data.pairs.resize(static_cast<std::size_t>(*max_samples));
    if (const std::string note = identical_pairs_note(file.path, data); !note.empty()) ZT_LOG(kWarn, note);
    std::move(data.pairs.begin(), data.pairs.end(), std::back_inserter(all.pairs));
  }
  return all;
}

std::vector<PreferenceFile> plain_files(const std::vector<std::string>& paths) {
  std::vector<PreferenceFile> files;
  for (const std::string& path : paths) files.push_back({path});
  return files;
}

std::string joined_paths(const std::vector<PreferenceFile>& files) {
  std::vector<std::string> paths;
  for (const PreferenceFile& file : files) paths.push_back(file.path);
  return join_list(paths);
}

// LLaMA-Factory's val_size as sample indices: {train, eval}, each in the file's order.
std::pair<std::vector<std::size_t>, std::vector<std::size_t>> validation_indices(std::size_t count, double val_size,
                                                                                 std::uint64_t seed) {
  const auto eval_count =
      static_cast<std::size_t>(val_size >= 1 ? val_size : std::ceil(val_size * static_cast<double>(count)));
  ZT_REQUIRE(eval_count >= 1 && eval_count < count,
             "--val_size " + number_text(val_size) + " leaves " + std::to_string(count - std::min(count, eval_count)) +
                 " of " + std::to_string(count) + " samples to train on and " + std::to_string(eval_count) +
                 " to evaluate; each needs at least one");
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  // Fisher-Yates with our own index draw, the same on every standard library.
  std::mt19937_64 rng(seed ^ 0x5EEDDA7A5E7ull);
  for (std::size_t i = count; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  std::vector<std::size_t> eval(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(eval_count));
  std::vector<std::size_t> train(order.begin() + static_cast<std::ptrdiff_t>(eval_count), order.end());
  std::sort(eval.begin(), eval.end());
  std::sort(train.begin(), train.end());
  return {train, eval};
}

PreferenceDataset pairs_at(const PreferenceDataset& data, const std::vector<std::size_t>& indices) {
  PreferenceDataset part;
  for (std::size_t i : indices) part.pairs.push_back(data.pairs[i]);
  return part;
}

// --stage dpo: the preference pairs the arguments name.
SelectedData select_preferences(const TrainingArguments& args) {
  SelectedData selected;
  const std::vector<PreferenceFile> train_files = args.dataset.empty()
                                                      ? plain_files(data_files(args.train_file))
                                                      : preference_files(args.dataset, args.dataset_dir);
  selected.train_pairs = read_preference_files(train_files, args.max_samples);
  selected.train_source = joined_paths(train_files);
  std::vector<PreferenceFile> eval_files;
  if (!args.validation_file.empty()) eval_files = plain_files(data_files(args.validation_file));
  if (!args.eval_dataset.empty()) eval_files = preference_files(args.eval_dataset, args.dataset_dir);
  if (!eval_files.empty()) {
    selected.eval_pairs = read_preference_files(eval_files, args.max_samples);
    selected.eval_source = joined_paths(eval_files);
  } else if (args.val_size > 0) {
    const auto [train, eval] =
        validation_indices(selected.train_pairs.pairs.size(), args.val_size, static_cast<std::uint64_t>(args.seed));
    selected.eval_pairs = pairs_at(selected.train_pairs, eval);
    selected.train_pairs = pairs_at(selected.train_pairs, train);
    selected.eval_source = "--val_size " + number_text(args.val_size) + " of " + selected.train_source;
  }
  return selected;
}

}  // namespace

std::vector<std::string> data_files(const std::string& list) {
  if (is_file(list)) return {list};
  return split_comma_list(list);
}

std::vector<std::string> llama_factory_files(const std::string& names, const std::string& dataset_dir,
                                             bool pretraining) {
  std::vector<std::string> paths;
  for (PreferenceFile& file : named_files(names, dataset_dir, pretraining ? "pt" : "sft"))
    paths.push_back(std::move(file.path));
  return paths;
}

std::vector<PreferenceFile> preference_files(const std::string& names, const std::string& dataset_dir) {
  return named_files(names, dataset_dir, "dpo");
}

std::pair<Dataset, Dataset> split_validation(const Dataset& data, double val_size, std::uint64_t seed) {
  const auto [train, eval] = validation_indices(data.size(), val_size, seed);
  return {subset(data, train), subset(data, eval)};
}

// run_clm.py's data: each file's texts (clm_texts.h), concatenated; without a validation file
// the first validation_split_percentage % of the training texts evaluate.
SelectedData select_run_clm(const TrainingArguments& args) {
  auto read = [&](const std::string& list, std::string& source) {
    Dataset all;
    all.format = DataFormat::kText;
    const std::vector<std::string> files = data_files(list);
    for (const std::string& file : files) {
      Dataset one = load_clm_texts(file, args.keep_linebreaks);
      if (args.max_samples && one.texts.size() > static_cast<std::size_t>(*args.max_samples))
        one.texts.resize(static_cast<std::size_t>(*args.max_samples));
      all.texts.insert(all.texts.end(), one.texts.begin(), one.texts.end());
    }
    source = join_list(files);
    return all;
  };
  SelectedData selected;
  selected.train = read(args.train_file, selected.train_source);
  if (!args.validation_file.empty()) {
    selected.eval = read(args.validation_file, selected.eval_source);
  } else if (args.validation_split_percentage > 0) {
    auto [train, eval] = split_clm_validation(selected.train, args.validation_split_percentage);
    ZT_REQUIRE(!train.texts.empty(), selected.train_source + ": --validation_split_percentage " +
                                         std::to_string(args.validation_split_percentage) +
                                         " leaves no text to train on");
    selected.eval_source = "the first " + std::to_string(args.validation_split_percentage) + "% of " +
                           selected.train_source + " (--validation_split_percentage)";
    selected.train = std::move(train);
    const bool evaluates = args.do_eval || args.eval_on_start || args.eval_strategy != IntervalStrategy::kNo;
    ZT_REQUIRE(!eval.texts.empty() || !evaluates,
               selected.eval_source + " is no text (of " + std::to_string(selected.train.texts.size()) +
                   "), and the run evaluates: raise --validation_split_percentage or give --validation_file");
    if (!eval.texts.empty()) selected.eval = std::move(eval);
  }
  return selected;
}

// ChatGLM's main.py names the keys of its records (--prompt_column, --response_column,
// --history_column): the files are read as a LLaMA-Factory entry with those columns reads them.
std::vector<PreferenceFile> files_with_columns(const std::string& paths, const TrainingArguments& args) {
  std::vector<PreferenceFile> files = plain_files(data_files(paths));
  if (args.prompt_column.empty() && args.response_column.empty() && args.history_column.empty()) return files;
  const std::string where = "--prompt_column, --response_column, --history_column";
  json columns = {{"prompt", args.prompt_column}, {"response", args.response_column}};
  if (!args.history_column.empty()) columns["history"] = args.history_column;
  const std::optional<EntryColumns> read_as = supervised_columns({{"columns", columns}}, where);
  for (PreferenceFile& file : files) file.columns = read_as;
  return files;
}

SelectedData select_data(const TrainingArguments& args) {
  if (args.stage == "dpo") return select_preferences(args);
  if (args.run_clm_style()) return select_run_clm(args);
  SelectedData selected;
  const std::string stage = args.stage == "pt" ? "pt" : "sft";
  const std::vector<PreferenceFile> train_files = args.dataset.empty()
                                                      ? files_with_columns(args.train_file, args)
                                                      : named_files(args.dataset, args.dataset_dir, stage);
  selected.train = read_files(train_files, args.max_samples);
  selected.train_source = joined_paths(train_files);
  std::vector<PreferenceFile> eval_files;
  if (!args.validation_file.empty()) eval_files = files_with_columns(args.validation_file, args);
  if (!args.eval_dataset.empty()) eval_files = named_files(args.eval_dataset, args.dataset_dir, stage);
  if (!eval_files.empty()) {
    selected.eval = read_files(eval_files, args.max_samples);
    selected.eval_source = joined_paths(eval_files);
  } else if (args.val_size > 0) {
    auto [train, eval] = split_validation(selected.train, args.val_size, static_cast<std::uint64_t>(args.seed));
    selected.train = std::move(train);
    selected.eval = std::move(eval);
    selected.eval_source = "--val_size " + number_text(args.val_size) + " of " + selected.train_source;
  }
  return selected;
}

}  // namespace zt::train
