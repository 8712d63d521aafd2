// `zerotune train --finetuning_type ptuning` end to end on the shipped tiny Qwen model (the
// training job the CLI runs): output_dir and each checkpoint hold the prefix encoder alone,
// under ChatGLM's names, with config.json's pre_seq_len and prefix_projection and the
// tokenizer files; a run resumed from a checkpoint ends bit for bit where the uninterrupted
// one did.
#include <gtest/gtest.h>

#include <filesystem>

#include "models/config/config.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/process_test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/training_job.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

class PtuningTraining : public testing::FolderTest {
 protected:
  void train(const fs::path& output_dir, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--finetuning_type", "ptuning", "--pre_seq_len", "4", "--prefix_projection", "true",
                                 "--max_steps", "4", "--save_steps", "2", "--logging_steps", "1", "--learning_rate",
                                 "1e-2", "--output_dir", output_dir.string()});
    run_training_job(parse_training_arguments(testing::tiny_qwen_job_flags(extra)));
  }
};

std::vector<std::string> sorted_names(const SafetensorsFile& file) {
  std::vector<std::string> names = file.names();
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(PtuningTraining, WritesThePrefixAloneAndResumesExactly) {
  const fs::path whole = dir_ / "whole", resumed = dir_ / "resumed";
  train(whole);
  const std::vector<std::string> expected_names{
      "transformer.prefix_encoder.embedding.weight", "transformer.prefix_encoder.trans.0.bias",
      "transformer.prefix_encoder.trans.0.weight", "transformer.prefix_encoder.trans.2.bias",
      "transformer.prefix_encoder.trans.2.weight"};
  for (const fs::path& dir : {whole, whole / "checkpoint-2", whole / "checkpoint-4"}) {
    for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
      EXPECT_TRUE(fs::is_regular_file(dir / file)) << (dir / file);
    const nlohmann::ordered_json config = models::read_json_file((dir / "config.json").string());
    EXPECT_EQ(config["pre_seq_len"], 4) << dir;
    EXPECT_EQ(config["prefix_projection"], true) << dir;
    EXPECT_EQ(sorted_names(SafetensorsFile::open((dir / "model.safetensors").string())), expected_names) << dir;
  }
  EXPECT_TRUE(fs::is_regular_file(whole / "checkpoint-2" / "optimizer_index.json"));

  train(resumed, {"--resume_from_checkpoint", (whole / "checkpoint-2").string()});
  const SafetensorsFile a = SafetensorsFile::open((whole / "model.safetensors").string());
  const SafetensorsFile b = SafetensorsFile::open((resumed / "model.safetensors").string());
  for (const std::string& name : expected_names)
    EXPECT_EQ(a.get(name).to_vector(), b.get(name).to_vector()) << name << " differs after resuming";
  const SafetensorsFile start = SafetensorsFile::open((whole / "checkpoint-2" / "model.safetensors").string());
  EXPECT_NE(start.get(expected_names[0]).to_vector(), a.get(expected_names[0]).to_vector())
      << "steps 3 and 4 did not change the prefix";
}

}  // namespace
}  // namespace zt::train
