// --stage dpo's arguments: LLaMA-Factory's DPO example file as it is, its pref_* options and
// TRL's DPOConfig names (beta, loss_type, label_smoothing, rpo_alpha, reference_free) honoured,
// and each option zerotune does not run refused or warned about by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/common/op_test_util.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

using testing::joined;
using testing::yaml;
using testing::yaml_error;

TrainingArguments json_file(const std::string& text) {
  return parse_training_arguments_text(text, ArgumentsFileFormat::kJson, "args.json", {});
}
// LLaMA-Factory's examples/train_lora/qwen2_5_lora_dpo.yaml, paths aside.
constexpr const char* kLlamaFactoryDpo = R"(### model
model_name_or_path: Qwen/Qwen2.5-7B-Instruct
trust_remote_code: true

### method
stage: dpo
do_train: true
finetuning_type: lora
lora_rank: 8
lora_target: all
pref_beta: 0.1
pref_loss: sigmoid  # choices: [sigmoid (dpo), orpo, simpo]

### dataset
dataset: dpo_en_demo
template: qwen
cutoff_len: 2048
max_samples: 1000
overwrite_cache: true
preprocessing_num_workers: 16
dataloader_num_workers: 4

### output
output_dir: saves/qwen2_5-7b/lora/dpo
logging_steps: 10
save_steps: 500
plot_loss: true
overwrite_output_dir: true
save_only_model: false
report_to: none

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 5.0e-6
num_train_epochs: 3.0
lr_scheduler_type: cosine
warmup_ratio: 0.1
bf16: true
ddp_timeout: 180000000
)";

TEST(PreferenceArguments, LlamaFactoryDpoExampleIsAccepted) {
  const TrainingArguments args = yaml(kLlamaFactoryDpo);
  EXPECT_EQ(args.stage, "dpo");
  EXPECT_EQ(args.pref_beta, 0.1);
  EXPECT_EQ(args.pref_loss, "sigmoid");
  EXPECT_EQ(args.finetuning_type, FinetuningType::kLora);
  EXPECT_EQ(args.max_length, 2048);
  const TrainingArguments orpo = yaml(std::string(kLlamaFactoryDpo) +
                                      "pref_ftx: 0.5\nsimpo_gamma: 0.7\ndpo_label_smoothing: 0.1\n"
                                      "pref_bco_weight: 0.0\n");
  EXPECT_EQ(orpo.pref_ftx, 0.5);
  EXPECT_EQ(orpo.simpo_gamma, 0.7);
  EXPECT_EQ(orpo.dpo_label_smoothing, 0.1);
}

TEST(PreferenceArguments, TrlDpoConfigNamesSetTheSameOptions) {
  const TrainingArguments args = json_file(R"({"model_name_or_path": "m", "output_dir": "o", "train_file": "p.json",
      "stage": "dpo", "beta": 0.25, "loss_type": "ipo", "label_smoothing": 0.05, "rpo_alpha": 1.0,
      "reference_free": true, "precompute_ref_log_probs": true, "max_prompt_length": 512,
      "max_completion_length": 1024})");
  EXPECT_TRUE(args.precompute_ref_log_probs);
  EXPECT_EQ(args.pref_beta, 0.25);
  EXPECT_EQ(args.pref_loss, "ipo");
  EXPECT_EQ(args.dpo_label_smoothing, 0.05);
  ASSERT_TRUE(args.rpo_alpha.has_value());
  EXPECT_EQ(*args.rpo_alpha, 1.0);
  EXPECT_TRUE(args.reference_free);
  const std::string warnings = joined(args.warnings);
  EXPECT_NE(warnings.find("max_prompt_length"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("max_completion_length"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("cutoff_len"), std::string::npos) << warnings;
}

TEST(PreferenceArguments, WhatZerotuneDoesNotRunIsRefusedByName) {
  const std::string base = "model_name_or_path: m\noutput_dir: o\ndataset: a\nstage: dpo\n";
  std::string msg = yaml_error(base + "pref_loss: robust\n");
  EXPECT_NE(msg.find("--pref_loss (TRL's loss_type) robust is TRL's"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sigmoid, hinge, ipo, kto_pair, orpo or simpo"), std::string::npos) << msg;
  msg = yaml_error(base + "pref_bco_weight: 0.5\n");
  EXPECT_NE(msg.find("--pref_bco_weight"), std::string::npos) << msg;
  msg = yaml_error(base + "packing: true\n");
  EXPECT_NE(msg.find("--packing with --stage dpo"), std::string::npos) << msg;
  msg = yaml_error(base + "ref_model: other/model\n");
  EXPECT_NE(msg.find("a separate reference model"), std::string::npos) << msg;
  msg = yaml_error(base + "pref_beta: 0\ndpo_label_smoothing: 0.7\n");
  EXPECT_NE(msg.find("--pref_beta (TRL's beta) must be > 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--dpo_label_smoothing (TRL's label_smoothing) must be in [0, 0.5]"), std::string::npos) << msg;
  msg = yaml_error(base + "sync_ref_model: true\n");
  EXPECT_NE(msg.find("sync_ref_model"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train
