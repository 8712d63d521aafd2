#include "train/args/output_dir_check.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/usage_error.h"
#include "runtime/user_paths.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

fs::path normalised(const std::string& path) {
  std::error_code ignored;
  const fs::path absolute = fs::weakly_canonical(fs::path(path), ignored);
  return ignored ? fs::absolute(fs::path(path)).lexically_normal() : absolute;
}

// Whether `path` is `folder` or lies inside it.
bool within(const fs::path& path, const fs::path& folder) {
  const auto [folder_end, path_at] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return folder_end == folder.end() || (std::next(folder_end) == folder.end() && folder_end->empty());
}

bool is_directory(const std::string& path) {
  std::error_code ignored;
  return !path.empty() && fs::is_directory(path, ignored);
}

// The files a run writes directly into output_dir (HF's model folder, PEFT's adapter, the
// trainer's state and logs); checkpoint-N folders are checked separately.
bool written_by_the_run(const std::string& name) {
  static const std::vector<std::string> kNames = {"config.json",
                                                  "generation_config.json",
                                                  "model.safetensors",
                                                  "model.safetensors.index.json",
                                                  "tokenizer.json",
                                                  "tokenizer_config.json",
                                                  "special_tokens_map.json",
                                                  "vocab.json",
                                                  "merges.txt",
                                                  "tokenizer.model",
                                                  "chat_template.jinja",
                                                  "adapter_config.json",
                                                  "adapter_model.safetensors",
                                                  "trainer_state.json",
                                                  "training_args.json",
                                                  "train_log.jsonl",
                                                  "training_loss.png",
                                                  "training_lr.png",
                                                  "all_results.json",
                                                  "train_results.json",
                                                  "eval_results.json"};
  if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) return true;
  return name.rfind("model-", 0) == 0 && name.size() > 12 && name.substr(name.size() - 12) == ".safetensors";
}

std::vector<std::string> data_files(const TrainingArguments& args) {
  std::vector<std::string> files;
  for (const std::string* list : {&args.train_file, &args.validation_file}) {
    std::stringstream items(*list);
    for (std::string item; std::getline(items, item, ',');)
      if (!item.empty()) files.push_back(item);
  }
  return files;
}

// Refuses output_dir being the folder `given` (an input named by `flag`) or inside it.
void refuse_within(const TrainingArguments& args, const std::string& given, const std::string& flag,
                   const std::string& what, const std::string& advice) {
  if (!is_directory(given)) return;  // a hub id or nothing: no files of the user's to replace
  ZT_REQUIRE_USAGE(!within(normalised(args.output_dir), normalised(given)),
                   "--output_dir " + args.output_dir + " is " + what + " (" + flag + " " + given +
                       ") or lies inside it: the run's saves would replace or mix with its files; " + advice);
}

void check_not_overwriting_inputs(const TrainingArguments& args) {
  const fs::path out = normalised(args.output_dir);
  refuse_within(args, args.model_name_or_path, "--model_name_or_path", "the model folder", "train into another folder");
  refuse_within(args, args.resume_from_checkpoint, "--resume_from_checkpoint", "the checkpoint being resumed",
                "use the folder that holds the checkpoint as --output_dir");
  for (const std::string& file : data_files(args)) {
    const fs::path data = normalised(file);
    if (!within(data, out) || data == out) continue;
    const fs::path inside = data.lexically_relative(out);
    const std::string first = inside.begin()->string();
    const bool replaced =
        (std::next(inside.begin()) == inside.end() && written_by_the_run(first)) || first.rfind("checkpoint-", 0) == 0;
    ZT_REQUIRE_USAGE(!replaced, "data file " + file + " is where the run writes into --output_dir " + args.output_dir +
                                    " (" + inside.string() +
                                    "), so training would replace it; move the data or choose another --output_dir");
  }
}

}  // namespace

void check_output_dir(const TrainingArguments& args) {
  require_writable_folder(args.output_dir, "--output_dir");
  const fs::path out(args.output_dir);
  std::error_code ignored;
  const bool occupied = fs::is_directory(out, ignored) && !fs::is_empty(out, ignored);
  ZT_REQUIRE_USAGE(!occupied || args.overwrite_output_dir || !args.resume_from_checkpoint.empty(),
                   "output directory " + args.output_dir +
                       " already exists and is not empty; use --overwrite_output_dir "
                       "to train into it anyway, or --resume_from_checkpoint to continue the run in it");
  check_not_overwriting_inputs(args);
}

}  // namespace zt::train
