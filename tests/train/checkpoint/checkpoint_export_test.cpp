// `zerotune export --checkpoint`: training checkpoints of the shipped tiny model (CPU, float32)
// written out from their master weights, run as a user runs it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "autograd/grad_mode.h"
#include "models/batch.h"
#include "models/weights/weights.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/optimizer_state_test_util.h"
#include "tests/common/process_test_util.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;
using zt::testing::CliRun;

const std::string kModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

Tensor logits_of(const CausalLM& model) {
  autograd::NoGradGuard no_recording;
  const std::vector<std::vector<std::int64_t>> sequences{{3, 17, 40, 41, 9, 12}, {7, 7, 300}};
  PackedBatch batch = pack_sequences(sequences, next_token_labels(sequences), model.device());
  return model.forward(batch.input_ids, batch.positions, batch.cu_seqlens).data();
}

train::OptimizerStateFiles masters_of(const fs::path& checkpoint) {
  std::optional<train::OptimizerStateFiles> masters = train::OptimizerStateFiles::open(checkpoint.string());
  EXPECT_TRUE(masters.has_value()) << checkpoint;
  return std::move(*masters);
}

// On a GPU the working copy is bf16 and the masters differ from it; shifting every master
// stands in for that here, so the two sources can be told apart. The one rank's file is
// rewritten with its description (metadata) kept.
void shift_masters(const fs::path& checkpoint) {
  const std::string path = (checkpoint / train::state_file_name(0, 1)).string();
  const SafetensorsFile original = SafetensorsFile::open(path);
  NamedTensors shifted;
  for (const std::string& name : original.names()) {
    Tensor value = original.get(name).clone();
    if (name.ends_with(".master"))
      for (std::int64_t i = 0; i < value.numel(); ++i) value.data<float>()[i] += 0.5f;
    shifted.emplace_back(name, value);
  }
  save_safetensors(path, shifted, original.metadata());
}

class ExportCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override { root_ = zt::testing::test_folder("export_checkpoint_test", true); }

  CliRun zerotune(const std::string& arguments) const { return zt::testing::run_zerotune(arguments, root_); }

  // Four steps with a checkpoint after the second, so the checkpoint is not the final model.
  fs::path train(const std::string& method_flags) {
    const CliRun run = zerotune("train --model_name_or_path " + kModel + " --train_file " + ZT_SOURCE_DIR +
                                "/examples/data/alpaca_demo.json --template qwen --device cpu --max_steps 4 "
                                "--save_steps 2 --per_device_train_batch_size 2 --learning_rate 1e-2 --output_dir " +
                                (root_ / "trained").string() + " " + method_flags);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return root_ / "trained/checkpoint-2";
  }

  CliRun export_checkpoint(const fs::path& checkpoint, const fs::path& out, const std::string& extra = "") const {
    return zerotune("export --checkpoint " + checkpoint.string() + " --output_dir " + out.string() + " " + extra);
  }

  fs::path root_;
};

TEST_F(ExportCheckpoint, FullRunExportsTheMastersAsALoadableFloat32Model) {
  const fs::path checkpoint = train("--finetuning_type full");
  const CliRun run = export_checkpoint(checkpoint, root_ / "out");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const SafetensorsFile exported = SafetensorsFile::open((root_ / "out/model.safetensors").string());
  const train::OptimizerStateFiles masters = masters_of(checkpoint);
  const CausalLM working = load_model(checkpoint.string());
  ASSERT_EQ(exported.names().size(), working.named_parameters().size());
  for (const NamedParameter& p : working.named_parameters()) {
    ASSERT_TRUE(exported.contains(p.name)) << p.name;
    EXPECT_EQ(exported.info(p.name).dtype, DType::kF32) << p.name;
    EXPECT_EQ(max_abs_diff(exported.get(p.name), masters.master(p.name)), 0.0) << p.name;
  }
  for (const char* file : {"config.json", "tokenizer.json", "generation_config.json"})
    EXPECT_TRUE(fs::is_regular_file(root_ / "out" / file)) << file;
  const Tensor expected = logits_of(working);
  EXPECT_EQ(max_abs_diff(logits_of(load_model((root_ / "out").string())), expected), 0.0)
      << "float32 training on the CPU keeps the working weights equal to the masters";
  EXPECT_GT(max_abs_diff(logits_of(load_model(kModel)), expected), 1e-4) << "training left the model unchanged";
}

TEST_F(ExportCheckpoint, MastersAreExportedNotTheWorkingCopyUnlessAsked) {
  const fs::path checkpoint = train("--finetuning_type full");
  shift_masters(checkpoint);
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "masters").exit_code, 0);
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "working", "--weights working").exit_code, 0);
  const train::OptimizerStateFiles masters = masters_of(checkpoint);
  const SafetensorsFile working = SafetensorsFile::open((checkpoint / "model.safetensors").string());
  const SafetensorsFile from_masters = SafetensorsFile::open((root_ / "masters/model.safetensors").string());
  const SafetensorsFile from_working = SafetensorsFile::open((root_ / "working/model.safetensors").string());
  for (const std::string& name : from_masters.names()) {
    EXPECT_EQ(max_abs_diff(from_masters.get(name), masters.master(name)), 0.0) << name;
    EXPECT_EQ(max_abs_diff(from_working.get(name), working.get(name)), 0.0) << name;
  }
}

TEST_F(ExportCheckpoint, DtypeRoundsTheMastersOnce) {
  const fs::path checkpoint = train("--finetuning_type full");
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "bf16", "--dtype bfloat16").exit_code, 0);
  const SafetensorsFile exported = SafetensorsFile::open((root_ / "bf16/model.safetensors").string());
  const train::OptimizerStateFiles masters = masters_of(checkpoint);
  for (const std::string& name : exported.names()) {
    EXPECT_EQ(exported.info(name).dtype, DType::kBF16) << name;
    const Tensor master = masters.master(name);
    EXPECT_EQ(max_abs_diff(exported.get(name).to(DType::kF32), master.to(DType::kBF16).to(DType::kF32)), 0.0) << name;
  }
}

TEST_F(ExportCheckpoint, FreezeTakesUntrainedParametersFromTheBase) {
  const fs::path checkpoint = train("--finetuning_type freeze --freeze_trainable_layers 1");
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "out").exit_code, 0);
  const SafetensorsFile exported = SafetensorsFile::open((root_ / "out/model.safetensors").string());
  const train::OptimizerStateFiles masters = masters_of(checkpoint);
  const SafetensorsFile base = SafetensorsFile::open(kModel + "/model.safetensors");
  int trained = 0, untrained = 0;
  for (const std::string& name : exported.names()) {
    const bool has_master = masters.contains(name);
    (has_master ? trained : untrained) += 1;
    const Tensor expected = has_master ? masters.master(name) : base.get(name);
    EXPECT_EQ(max_abs_diff(exported.get(name), expected), 0.0) << name;
    if (has_master) {
      EXPECT_GT(max_abs_diff(exported.get(name), base.get(name)), 0.0) << name << " was not trained";
    }
  }
  EXPECT_GT(trained, 0);
  EXPECT_GT(untrained, 0);
}

TEST_F(ExportCheckpoint, LoraMergedEqualsTheAdapterExportedMerged) {
  const fs::path checkpoint = train("--finetuning_type lora --lora_rank 4 --lora_target all");
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "merged", "--merge_lora").exit_code, 0);
  const CliRun reference =
      zerotune("export --model_name_or_path " + kModel + " --adapter_name_or_path " + checkpoint.string() +
               " --merge_lora --dtype float32 --output_dir " + (root_ / "reference").string());
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const SafetensorsFile merged = SafetensorsFile::open((root_ / "merged/model.safetensors").string());
  const SafetensorsFile expected = SafetensorsFile::open((root_ / "reference/model.safetensors").string());
  ASSERT_EQ(merged.names(), expected.names());
  for (const std::string& name : merged.names())
    EXPECT_EQ(max_abs_diff(merged.get(name), expected.get(name)), 0.0) << name;
  EXPECT_GT(max_abs_diff(logits_of(load_model((root_ / "merged").string())), logits_of(load_model(kModel))), 1e-4)
      << "the adapter changed nothing";
  shift_masters(checkpoint);
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "shifted", "--merge_lora").exit_code, 0);
  const SafetensorsFile shifted = SafetensorsFile::open((root_ / "shifted/model.safetensors").string());
  EXPECT_GT(max_abs_diff(shifted.get("model.layers.0.self_attn.q_proj.weight"),
                         expected.get("model.layers.0.self_attn.q_proj.weight")),
            0.0)
      << "the merge did not read the masters of A and B";
}

TEST_F(ExportCheckpoint, LoraUnmergedIsAnAdapterFolderOfTheMasters) {
  const fs::path checkpoint = train("--finetuning_type lora --lora_rank 4 --lora_target all");
  shift_masters(checkpoint);
  const CliRun run = export_checkpoint(checkpoint, root_ / "adapter");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::is_regular_file(root_ / "adapter/adapter_config.json"));
  EXPECT_FALSE(fs::exists(root_ / "adapter/model.safetensors"));
  const SafetensorsFile adapter = SafetensorsFile::open((root_ / "adapter/adapter_model.safetensors").string());
  const train::OptimizerStateFiles masters = masters_of(checkpoint);
  ASSERT_FALSE(adapter.names().empty());
  for (const std::string& name : adapter.names()) {
    EXPECT_EQ(adapter.info(name).dtype, DType::kF32) << name;
    EXPECT_EQ(max_abs_diff(adapter.get(name), masters.master(name)), 0.0) << name;
  }
}

TEST_F(ExportCheckpoint, WithoutOptimizerStateTheModelFilesAreExportedWithANote) {
  const fs::path checkpoint = train("--finetuning_type full --save_only_model");
  ASSERT_FALSE(fs::exists(checkpoint / train::kOptimizerIndexFile));
  const CliRun run = export_checkpoint(checkpoint, root_ / "out");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--save_only_model"), std::string::npos) << run.output;
  const SafetensorsFile exported = SafetensorsFile::open((root_ / "out/model.safetensors").string());
  const SafetensorsFile working = SafetensorsFile::open((checkpoint / "model.safetensors").string());
  for (const std::string& name : exported.names())
    EXPECT_EQ(max_abs_diff(exported.get(name), working.get(name)), 0.0) << name;
}

// In a checkpoint's single optimizer.safetensors as older checkpoints hold it, which export
// still reads.
TEST_F(ExportCheckpoint, MismatchedMastersAreAllReported) {
  const fs::path checkpoint = train("--finetuning_type full");
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "new").exit_code, 0);
  train::state_test::to_single_optimizer_file(checkpoint);
  ASSERT_EQ(export_checkpoint(checkpoint, root_ / "old").exit_code, 0);
  const SafetensorsFile from_new = SafetensorsFile::open((root_ / "new/model.safetensors").string());
  const SafetensorsFile from_old = SafetensorsFile::open((root_ / "old/model.safetensors").string());
  for (const std::string& name : from_new.names())
    EXPECT_EQ(max_abs_diff(from_old.get(name), from_new.get(name)), 0.0)
        << name << ": the old single file exports alike";
  const SafetensorsFile optimizer = SafetensorsFile::open((checkpoint / "optimizer.safetensors").string());
  NamedTensors damaged;
  for (const std::string& name : optimizer.names())
    if (name != "model.norm.weight.master") damaged.emplace_back(name, optimizer.get(name).clone());
  for (auto& [name, tensor] : damaged)
    if (name == "model.layers.0.mlp.up_proj.weight.master") tensor = Tensor::zeros({2, 2}, DType::kF32, Device::cpu());
  damaged.emplace_back("model.extra.weight.master", Tensor::zeros({3}, DType::kF32, Device::cpu()));
  save_safetensors((checkpoint / "optimizer.safetensors").string(), damaged);
  const CliRun run = export_checkpoint(checkpoint, root_ / "out");
  EXPECT_NE(run.exit_code, 0);
  for (const char* line :
       {"3 problem(s)", "missing: model.norm.weight.master",
        "wrong shape: model.layers.0.mlp.up_proj.weight.master is [2, 2]", "unexpected: model.extra.weight.master"})
    EXPECT_NE(run.output.find(line), std::string::npos) << line << " not in\n" << run.output;
  EXPECT_FALSE(fs::exists(root_ / "out/model.safetensors"));
}

TEST_F(ExportCheckpoint, RefusesToOverwriteTheCheckpointOrTheBase) {
  const fs::path checkpoint = train("--finetuning_type full");
  // A folder with files needs --overwrite_output_dir, and even then not these two.
  const CliRun occupied = export_checkpoint(checkpoint, kModel);
  EXPECT_EQ(occupied.exit_code, 2) << occupied.output;
  EXPECT_NE(occupied.output.find("already exists and is not empty"), std::string::npos) << occupied.output;
  for (const std::string& out : {checkpoint.string(), kModel}) {
    const CliRun run = export_checkpoint(checkpoint, out, "--overwrite_output_dir");
    EXPECT_EQ(run.exit_code, 2) << out;
    EXPECT_NE(run.output.find("export into another folder"), std::string::npos) << run.output;
  }
  EXPECT_TRUE(fs::exists(checkpoint / train::kOptimizerIndexFile));
}

TEST_F(ExportCheckpoint, RefusesAPTuningCheckpoint) {
  const fs::path checkpoint = train("--finetuning_type ptuning --pre_seq_len 4");
  const CliRun run = export_checkpoint(checkpoint, root_ / "out");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("--ptuning_checkpoint"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(root_ / "out"));
}

TEST_F(ExportCheckpoint, FlagsOfTheOtherSourceAreUsageErrors) {
  const std::string checkpoint = (root_ / "checkpoint-2").string(), out = (root_ / "out").string();
  for (const std::string& flags : {std::string("--weights bogus"), "--adapter_name_or_path " + checkpoint}) {
    const CliRun run = export_checkpoint(checkpoint, out, flags);
    EXPECT_EQ(run.exit_code, 2) << flags << "\n" << run.output;
  }
  const CliRun without_checkpoint =
      zerotune("export --model_name_or_path " + kModel + " --weights working --output_dir " + out);
  EXPECT_EQ(without_checkpoint.exit_code, 2) << without_checkpoint.output;
  EXPECT_NE(without_checkpoint.output.find("needs --checkpoint"), std::string::npos) << without_checkpoint.output;
}

TEST_F(ExportCheckpoint, TheBaseFolderCanBeOverridden) {
  const fs::path checkpoint = train("--finetuning_type full");
  const CliRun missing =
      export_checkpoint(checkpoint, root_ / "out", "--model_name_or_path " + (root_ / "nowhere").string());
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("no such folder: " + (root_ / "nowhere").string()), std::string::npos)
      << missing.output;
  fs::copy(kModel, root_ / "moved-base");
  const CliRun moved =
      export_checkpoint(checkpoint, root_ / "out", "--model_name_or_path " + (root_ / "moved-base").string());
  EXPECT_EQ(moved.exit_code, 0) << moved.output;
  EXPECT_NE(moved.output.find("moved-base"), std::string::npos) << moved.output;
}

}  // namespace
}  // namespace zt::models
