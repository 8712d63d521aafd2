// The data the arguments name, read: --train_file and --validation_file (one file, or several
// separated by commas), or LLaMA-Factory's --dataset and --eval_dataset (names that
// dataset_dir/dataset_info.json maps to a local file in alpaca or sharegpt formatting with the
// default columns, or file paths; under --stage dpo ranking entries, their columns honoured).
// Every file is cut to its first --max_samples samples, the files are concatenated
// (LLaMA-Factory's mix_strategy concat), and --val_size splits its share off the training data
// to evaluate on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train/args/training_arguments.h"
#include "train/data/dataset.h"
#include "train/data/preference_data.h"

namespace zt::train {

struct SelectedData {
  Dataset train;
  std::optional<Dataset> eval;
  std::string train_source;  // the files, as messages name the data
  std::string eval_source;
  // --stage dpo: the preference pairs instead (train and eval above stay empty).
  PreferenceDataset train_pairs = {};
  std::optional<PreferenceDataset> eval_pairs = std::nullopt;
};

// The data of the run: under --stage dpo preference pairs (train_pairs, eval_pairs) from
// ranking entries of dataset_info.json or files in any preference layout, else samples.
SelectedData select_data(const TrainingArguments& args);

// A --train_file value as files: the value itself when it names a file, else its
// comma-separated parts.
std::vector<std::string> data_files(const std::string& list);

// LLaMA-Factory's comma-separated dataset names as files: each through dataset_dir's
// dataset_info.json, else taken as a path (as given, or inside dataset_dir). What zerotune
// cannot read as LLaMA-Factory would (hub datasets, KTO or multimodal data, ranking data, ...)
// is an error naming the dataset and the entry. With `pretraining` (--stage pt) an entry's prompt
// column is the text, which zerotune reads as "text".
std::vector<std::string> llama_factory_files(const std::string& names, const std::string& dataset_dir,
                                             bool pretraining = false);

// A data file and, for a dataset_info.json ranking entry with columns or tags, or another entry
// whose columns or tags rename keys, how LLaMA-Factory reads its records (none: the layout is
// detected from the records' keys).
struct PreferenceFile {
  std::string path;
  std::optional<EntryColumns> columns = std::nullopt;
  // Other entries: the record keys LLaMA-Factory leaves unread, its columns not listing them.
  std::vector<std::string> unread_keys = {};
};

// The same names for --stage dpo: entries must be ranking data ("ranking": true), their
// columns and tags honoured; entries of other data are refused by name.
std::vector<PreferenceFile> preference_files(const std::string& names, const std::string& dataset_dir);

// LLaMA-Factory's val_size: a share (< 1, rounded up, as datasets' train_test_split does) or a
// number of samples, drawn with `seed`; returns {train, eval}, each in the file's order.
std::pair<Dataset, Dataset> split_validation(const Dataset& data, double val_size, std::uint64_t seed);

}  // namespace zt::train
