// What `zerotune train` checks before the model loads is reported before it loads: each run
// below names a model whose weights are damaged (or a folder with no model at all), and the
// error is still the one about the argument, found in seconds whatever the model's size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/process_test_util.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

const fs::path kSource(ZT_SOURCE_DIR);

class Preflight : public testing::FolderTest {
 protected:
  void SetUp() override {
    FolderTest::SetUp();
    // The shipped tiny model's config and tokenizer, with weights that are not safetensors.
    fs::create_directories(dir_ / "damaged");
    for (const char* file : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
      fs::copy_file(kSource / "examples/tiny-qwen" / file, dir_ / "damaged" / file);
    std::ofstream(dir_ / "damaged" / "model.safetensors") << "not a safetensors file";
    std::ofstream(dir_ / "a_file") << "x";
  }

  // `zerotune train` of `model` (a folder name under dir_) with `extra`, on the shipped data.
  testing::CliRun train(const std::string& model, const std::string& extra) {
    return testing::run_zerotune("train --model_name_or_path " + path(model) + " --train_file " +
                                     (kSource / "examples/data/alpaca_demo.json").string() +
                                     " --template qwen --device cpu --max_steps 1 " + extra,
                                 dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The run failed with `message` and never got to the model's weights.
  static void expect_refused(const testing::CliRun& run, const std::string& message, int exit_code = 1) {
    EXPECT_EQ(run.exit_code, exit_code) << run.output;
    EXPECT_NE(run.output.find(message), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("safetensors"), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("no tokenizer"), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("filesystem error"), std::string::npos) << run.output;
  }
};

TEST_F(Preflight, TheDamagedModelIsWhatFailsWhenTheArgumentsAreRight) {
  const testing::CliRun run = train("damaged", "--output_dir " + path("out"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("not a safetensors file or it is damaged"), std::string::npos) << run.output;
}

TEST_F(Preflight, AnOutputDirThatCannotBeAFolderOrIsOccupied) {
  expect_refused(train("no_model", "--output_dir " + path("a_file")),
                 "--output_dir " + path("a_file") + " is a file, not a folder");
  expect_refused(train("no_model", "--output_dir " + path("a_file/out")),
                 path("a_file") + " is a file, so the path cannot be created");
  fs::create_directories(dir_ / "used");
  std::ofstream(dir_ / "used" / "notes.txt") << "mine";
  // An occupied folder, or one the run's inputs are in, is a problem with the arguments: exit 2.
  expect_refused(train("no_model", "--output_dir " + path("used")),
                 "output directory " + path("used") + " already exists and is not empty; use --overwrite_output_dir",
                 2);
  fs::create_directories(dir_ / "model");
  expect_refused(train("model", "--output_dir " + path("model") + " --overwrite_output_dir"),
                 "--output_dir " + path("model") + " is the model folder", 2);
}

TEST_F(Preflight, AResumeCheckpointThatIsMissingOrIsNoCheckpoint) {
  expect_refused(train("no_model", "--output_dir " + path("out") + " --resume_from_checkpoint " + path("gone")),
                 "--resume_from_checkpoint " + path("gone") + " does not exist");
  fs::create_directories(dir_ / "not_a_checkpoint");
  expect_refused(
      train("no_model", "--output_dir " + path("out") + " --resume_from_checkpoint " + path("not_a_checkpoint")),
      "not a checkpoint folder (no trainer_state.json)");
  expect_refused(train("no_model", "--output_dir " + path("out") + " --resume_from_checkpoint true"),
                 "--resume_from_checkpoint true: no complete checkpoint-N folder in " + path("out"));
}

TEST_F(Preflight, DataFilesThatAreMissingOrDoNotParse) {
  expect_refused(train("no_model", "--output_dir " + path("out") + " --validation_file " + path("absent.json")),
                 "data file " + path("absent.json") + " does not exist");
  std::ofstream(dir_ / "bad.json") << "[\n  {\"instruction\": \"a\", \"output\": \"b\"},\n"
                                      "  {\"instruction\": \"c\" \"output\": \"d\"}\n]\n";
  expect_refused(train("no_model", "--output_dir " + path("out") + " --validation_file " + path("bad.json")),
                 path("bad.json") + ":3:30: not valid JSON");
}

// What the config says is part of the arguments: usage errors (exit code 2).
TEST_F(Preflight, ADeepSpeedConfigThatDoesNotParseOrMisspellsABlock) {
  std::ofstream(dir_ / "broken_ds.json")
      << "{\"train_batch_size\": \"auto\",\n  \"zero_optimization\": {\"stage\": 2,}}";
  expect_refused(train("no_model", "--output_dir " + path("out") + " --deepspeed " + path("broken_ds.json")),
                 path("broken_ds.json") + ":2:36: not valid JSON", 2);
  // Typed after the data is encoded (its "auto" values need the step count), still before the weights.
  std::ofstream(dir_ / "typo_ds.json") << R"({"train_batch_size": "auto", "zero_optimizaton": {"stage": 2}})";
  expect_refused(train("damaged", "--output_dir " + path("out") + " --deepspeed " + path("typo_ds.json")),
                 "zero_optimizaton (did you mean zero_optimization?) is not a DeepSpeed setting", 2);
}

TEST_F(Preflight, AnUnknownTemplateIsRefusedWithTheArguments) {
  expect_refused(train("no_model", "--output_dir " + path("out") + " --template qwen4"),
                 "--template: unknown chat template 'qwen4'", 2);
}

}  // namespace
}  // namespace zt::train
