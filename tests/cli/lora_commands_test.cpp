// `zerotune train --finetuning_type lora`, `zerotune export --merge_lora` and
// --adapter_name_or_path, run as a user runs them on the shipped tiny model (CPU).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "autograd/grad_mode.h"
#include "models/batch.h"
#include "models/peft/lora_files.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

fs::path test_root() { return zt::testing::test_folder("lora_cli_test"); }
const std::string kModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

zt::testing::CliRun zerotune(const std::string& arguments) { return zt::testing::run_zerotune(arguments, test_root()); }
using zt::testing::CliRun;

std::string train_arguments(const fs::path& output_dir) {
  return "train --model_name_or_path " + kModel + " --train_file " + ZT_SOURCE_DIR +
         "/examples/data/alpaca_demo.json --template qwen --device cpu --finetuning_type lora --lora_rank 4 "
         "--lora_target all --lora_dropout 0.1 --max_steps 30 --save_steps 15 --per_device_train_batch_size 2 "
         "--learning_rate 2e-2 --logging_steps 10 --output_dir " +
         output_dir.string();
}

bool same_tensors(const std::string& a, const std::string& b) {
  SafetensorsFile x = SafetensorsFile::open(a), y = SafetensorsFile::open(b);
  if (x.names() != y.names()) return false;
  for (const std::string& name : x.names())
    if (max_abs_diff(x.get(name), y.get(name)) != 0.0) return false;
  return true;
}

Tensor logits_of(const CausalLM& model) {
  autograd::NoGradGuard no_recording;
  PackedBatch batch = pack_sequences({{3, 17, 40, 41, 9, 12}, {7, 7, 300}},
                                     next_token_labels({{3, 17, 40, 41, 9, 12}, {7, 7, 300}}), model.device());
  return model.forward(batch.input_ids, batch.positions, batch.cu_seqlens).data();
}

class LoraCli : public ::testing::Test {
 protected:
  // A training run per test (a second on the CPU): enough steps that the adapted model
  // generates tokens of the tokenizer, which the random base model does not.
  void SetUp() override {
    root_ = test_root();
    fs::remove_all(root_);
    fs::create_directories(root_);
    trained_ = zerotune(train_arguments(root_ / "trained"));
  }
  fs::path root_;
  zt::testing::CliRun trained_;
};

TEST_F(LoraCli, TrainWritesPeftAdaptersIntoOutputDirAndCheckpoints) {
  ASSERT_EQ(trained_.exit_code, 0) << trained_.output;
  EXPECT_NE(trained_.output.find("trainable params: "), std::string::npos) << trained_.output;
  EXPECT_NE(trained_.output.find(" || trainable%: "), std::string::npos);
  for (const fs::path& dir : {root_ / "trained", root_ / "trained/checkpoint-15", root_ / "trained/checkpoint-30"}) {
    for (const char* file : {"adapter_config.json", "adapter_model.safetensors", "tokenizer.json"})
      EXPECT_TRUE(fs::is_regular_file(dir / file)) << dir / file;
    EXPECT_FALSE(fs::exists(dir / "model.safetensors")) << dir << ": the base model is not saved with an adapter";
  }
  EXPECT_FALSE(same_tensors((root_ / "trained/checkpoint-15/adapter_model.safetensors").string(),
                            (root_ / "trained/adapter_model.safetensors").string()))
      << "steps 16 to 30 changed nothing";
}

TEST_F(LoraCli, ResumingFromACheckpointEndsWhereTheRunEnded) {
  ASSERT_EQ(trained_.exit_code, 0) << trained_.output;
  const fs::path resumed = root_ / "resumed";
  fs::create_directories(resumed);
  fs::copy(root_ / "trained/checkpoint-15", resumed / "checkpoint-15", fs::copy_options::recursive);
  const CliRun run = zerotune(train_arguments(resumed) + " --resume_from_checkpoint true");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(same_tensors((root_ / "trained/adapter_model.safetensors").string(),
                           (resumed / "adapter_model.safetensors").string()));
}

// The checkpoint holds an adapter: resuming it as another method stops before anything loads,
// naming the method it was trained with.
TEST_F(LoraCli, ResumingWithAnotherMethodIsRefusedByName) {
  ASSERT_EQ(trained_.exit_code, 0) << trained_.output;
  const fs::path resumed = root_ / "resumed_full";
  fs::create_directories(resumed);
  fs::copy(root_ / "trained/checkpoint-15", resumed / "checkpoint-15", fs::copy_options::recursive);
  const CliRun run = zerotune("train --model_name_or_path " + kModel + " --train_file " + ZT_SOURCE_DIR +
                              "/examples/data/alpaca_demo.json --template qwen --device cpu --finetuning_type full "
                              "--max_steps 30 --save_steps 15 --per_device_train_batch_size 2 --output_dir " +
                              resumed.string() + " --resume_from_checkpoint true");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("was trained with --finetuning_type lora but this run's is full: add --finetuning_type "
                            "lora to resume it"),
            std::string::npos)
      << run.output;
}

TEST_F(LoraCli, ExportMergesTheAdapterIntoAModelFolder) {
  ASSERT_EQ(trained_.exit_code, 0) << trained_.output;
  const fs::path adapter = root_ / "trained", merged = root_ / "merged";
  const CliRun run = zerotune("export --model_name_or_path " + kModel + " --adapter_name_or_path " + adapter.string() +
                              " --export_dir " + merged.string() + " --merge_lora");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::is_regular_file(merged / "tokenizer.json"));
  CausalLM adapted = load_model(kModel);
  load_lora_adapter(adapted, adapter.string());
  const Tensor expected = logits_of(adapted);
  EXPECT_LE(relative_error(logits_of(load_model(merged.string())), expected), 1e-5);
  EXPECT_GT(max_abs_diff(logits_of(load_model(kModel)), expected), 1e-4) << "training left the model unchanged";
}

TEST_F(LoraCli, ExportRefusesAnAdapterWithoutMergeLora) {
  const CliRun run = zerotune("export --model_name_or_path " + kModel + " --adapter_name_or_path " +
                              (root_ / "trained").string() + " --output_dir " + (root_ / "unmerged").string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--merge_lora"), std::string::npos) << run.output;
}

TEST_F(LoraCli, GenerateAndEvaluateTakeAnAdapter) {
  ASSERT_EQ(trained_.exit_code, 0) << trained_.output;
  const std::string adapter = " --adapter_name_or_path " + (root_ / "trained").string();
  const CliRun generated = zerotune("generate --model_name_or_path " + kModel + adapter +
                                    " --device cpu --max_new_tokens 4 --prompt 'Spell out the digits. 0 4'");
  EXPECT_EQ(generated.exit_code, 0) << generated.output;
  std::ofstream(root_ / "texts.jsonl") << "{\"text\": \"Spell out the digits. 0 4\"}\n";
  const CliRun plain = zerotune("evaluate --model_name_or_path " + kModel + " --device cpu --validation_file " +
                                (root_ / "texts.jsonl").string());
  const CliRun adapted = zerotune("evaluate --model_name_or_path " + kModel + adapter +
                                  " --device cpu --validation_file " + (root_ / "texts.jsonl").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(adapted.exit_code, 0) << adapted.output;
  EXPECT_NE(plain.output, adapted.output) << "the adapter did not change the evaluation";
}

}  // namespace
}  // namespace zt::models
