// The output folder is refused where the run's saves would replace what the user gave it: the
// model folder (or a folder inside it), the checkpoint being resumed, a data file with the name
// of a file the run writes; and allowed where nothing of theirs is at risk.
#include "train/args/output_dir_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt::train {
namespace {

using testing::error_of;
using testing::expect_mentions;

class OutputDirCheck : public testing::FolderTest {
 protected:
  void SetUp() override {
    FolderTest::SetUp();
    std::filesystem::create_directories(dir_ / "model");
    std::ofstream(dir_ / "model" / "config.json") << "{}";
    std::ofstream(dir_ / "data.json") << "[]";
  }
  TrainingArguments args(const std::string& output, std::vector<std::string> extra = {}) const {
    std::vector<std::string> all = {
        "--model_name_or_path", (dir_ / "model").string(),     "--output_dir",          output,
        "--train_file",         (dir_ / "data.json").string(), "--overwrite_output_dir"};
    all.insert(all.end(), extra.begin(), extra.end());
    return parse_training_arguments(all);
  }
};

TEST_F(OutputDirCheck, TheModelFolderOrOneInsideItIsRefusedEvenWithOverwrite) {
  expect_mentions(error_of([&] { check_output_dir(args((dir_ / "model").string())); }),
                  {"--output_dir", "model folder", "another folder"});
  expect_mentions(error_of([&] { check_output_dir(args((dir_ / "model" / ".").string())); }), {"model folder"});
  expect_mentions(error_of([&] { check_output_dir(args((dir_ / "model" / "out").string())); }), {"inside it"});
  EXPECT_NO_THROW(check_output_dir(args((dir_ / "out").string())));
  EXPECT_NO_THROW(check_output_dir(args((dir_ / "model-out").string()))) << "a sibling with the same prefix";
}

TEST_F(OutputDirCheck, TheCheckpointBeingResumedIsRefusedAsTheOutput) {
  const std::filesystem::path checkpoint = dir_ / "out" / "checkpoint-10";
  std::filesystem::create_directories(checkpoint);
  expect_mentions(error_of([&] {
                    check_output_dir(args(checkpoint.string(), {"--resume_from_checkpoint", checkpoint.string()}));
                  }),
                  {"checkpoint being resumed", "folder that holds"});
  EXPECT_NO_THROW(check_output_dir(args((dir_ / "out").string(), {"--resume_from_checkpoint", checkpoint.string()})))
      << "resuming into the run's own folder is the normal case";
}

TEST_F(OutputDirCheck, DataWhereTheRunWritesIsRefused) {
  const std::filesystem::path out = dir_ / "out";
  std::filesystem::create_directories(out / "checkpoint-5");
  for (const std::filesystem::path& data :
       {out / "trainer_state.json", out / "model.safetensors", out / "model-00001-of-00002.safetensors",
        out / "checkpoint-5" / "train.json"}) {
    std::ofstream(data) << "[]";
    TrainingArguments a = args(out.string());
    a.train_file = (dir_ / "data.json").string() + "," + data.string();
    expect_mentions(error_of([&] { check_output_dir(a); }), {"data file", "would replace it"});
  }
  TrainingArguments kept = args(out.string());
  kept.validation_file = (out / "my_eval.json").string();
  std::ofstream(out / "my_eval.json") << "[]";
  EXPECT_NO_THROW(check_output_dir(kept)) << "a data file of its own name in output_dir is not written over";
}

TEST_F(OutputDirCheck, AnOccupiedFolderNeedsOverwriteOrResume) {
  const std::filesystem::path out = dir_ / "out";
  std::filesystem::create_directories(out);
  std::ofstream(out / "notes.txt") << "mine";
  TrainingArguments a = args(out.string());
  a.overwrite_output_dir = false;
  expect_mentions(error_of([&] { check_output_dir(a); }), {"not empty", "--overwrite_output_dir"});
  a.overwrite_output_dir = true;
  EXPECT_NO_THROW(check_output_dir(a));
}

TEST_F(OutputDirCheck, AHubIdThatIsNoFolderIsNotCompared) {
  TrainingArguments a = args("Qwen/Qwen2.5-0.5B/out");
  a.model_name_or_path = "Qwen/Qwen2.5-0.5B";
  EXPECT_NO_THROW(check_output_dir(a));
}

}  // namespace
}  // namespace zt::train
