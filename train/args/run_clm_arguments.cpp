// transformers' examples/pytorch/language-modeling/run_clm.py (and run_clm_no_trainer.py): the
// options of its ModelArguments and DataTrainingArguments that `zerotune train` accepts without a
// member. Its honoured data options (block_size, validation_split_percentage, keep_linebreaks,
// max_train_samples, max_eval_samples, preprocessing_num_workers) are flags of argument_table.cpp;
// the options it shares with LLaMA-Factory (cache_dir, use_fast_tokenizer, low_cpu_mem_usage,
// trust_remote_code, streaming, overwrite_cache) and model_revision are in LLaMA-Factory's table.
#include "train/args/other_arguments.h"

namespace zt::train {
namespace {

using enum ValueKind;
using enum Verdict;

constexpr const char* kLocalData =
    "zerotune reads local data files and downloads no datasets: write the dataset's text to a file (in Python: "
    "datasets.load_dataset(NAME, CONFIG, split=\"train\").to_json(\"train.jsonl\"), and the validation split "
    "likewise) and pass --train_file train.jsonl --validation_file validation.jsonl";
constexpr const char* kModelFolder =
    "zerotune reads the config and tokenizer from model_name_or_path's folder: copy that file there (or give "
    "the same path as model_name_or_path), and drop the option";
constexpr const char* kFromScratch =
    "it builds a new model to train from random weights, and zerotune fine-tunes the weights of "
    "model_name_or_path: drop the option";
constexpr const char* kPureHalf =
    "it loads the weights in that dtype and trains them there, with no fp32 master copy (pure half-precision "
    "training), which zerotune does not do: drop it; --bf16 (or --fp16) trains in mixed precision with fp32 "
    "master weights";
constexpr const char* kHubToken = "zerotune reads the hub token from HF_TOKEN: set that";

}  // namespace

const std::vector<OtherArgument>& run_clm_other_arguments() {
  static const std::vector<OtherArgument> table = {
      // ModelArguments.
      {"model_type", kText, "[null]", kRefused, kFromScratch},
      {"config_overrides", kText, "[null]", kRefused, kFromScratch},
      {"config_name", kText, "[null]", kRefused, kModelFolder},
      {"tokenizer_name", kText, "[null]", kRefused, kModelFolder},
      {"token", kText, "[null]", kNoEffect, kHubToken},
      {"use_auth_token", kText, "[null, false]", kNoEffect, kHubToken},  // older releases
      {"torch_dtype", kText, "[null, \"float32\"]", kRefused, kPureHalf},
      {"dtype", kText, "[null, \"float32\"]", kRefused, kPureHalf},  // torch_dtype's name since 4.56
      // DataTrainingArguments.
      {"dataset_name", kText, "[null]", kRefused, kLocalData},
      {"dataset_config_name", kText, "[null]", kRefused, kLocalData},
  };
  return table;
}

}  // namespace zt::train
