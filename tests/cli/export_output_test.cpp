// Where `zerotune export` may write (cli/export_output.h): never into an adapter folder or over
// the inputs, into a folder with files only with --overwrite_output_dir, and a new folder whole
// or not at all. Run as a user runs it, on the shipped tiny model and a LoRA adapter made for it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen";
const fs::path kAdapter = fs::path(ZT_SOURCE_DIR) / "tests/data/models/qwen2_lora";

class ExportOutput : public testing::FolderTest {
 protected:
  testing::CliRun merge_into(const fs::path& out, const std::string& extra = "") {
    return testing::run_zerotune("export --model_name_or_path " + kModel.string() + " --adapter_name_or_path " +
                                     adapter_.string() + " --merge_lora --output_dir " + out.string() + extra,
                                 dir_);
  }
  void SetUp() override {
    FolderTest::SetUp();
    adapter_ = dir_ / "adapter";
    fs::copy(kAdapter, adapter_, fs::copy_options::recursive);
  }
  static void expect_refused(const testing::CliRun& run, const std::string& message) {
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find(message), std::string::npos) << run.output;
  }
  fs::path adapter_;
};

TEST_F(ExportOutput, AnAdapterFolderIsNeverAModelsOutput) {
  expect_refused(merge_into(adapter_), "is the folder of --adapter_name_or_path itself");
  const fs::path other = dir_ / "other_adapter";
  fs::copy(kAdapter, other, fs::copy_options::recursive);
  for (const std::string extra : {"", " --overwrite_output_dir"})
    expect_refused(merge_into(other, extra), "holds a PEFT adapter (adapter_config.json)");
  EXPECT_FALSE(fs::exists(other / "config.json")) << "the adapter folder was written into";
  EXPECT_FALSE(fs::exists(adapter_ / "config.json")) << "the adapter folder was written into";
}

TEST_F(ExportOutput, AFolderWithFilesNeedsOverwriteOutputDir) {
  const fs::path used = dir_ / "used";
  fs::create_directories(used);
  std::ofstream(used / "notes.txt") << "mine";
  expect_refused(merge_into(used),
                 "--output_dir " + used.string() + " already exists and is not empty; use --overwrite_output_dir");
  EXPECT_FALSE(fs::exists(used / "model.safetensors"));
  const testing::CliRun run = merge_into(used, " --overwrite_output_dir");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::is_regular_file(used / "model.safetensors"));
  EXPECT_EQ(testing::read_text(used / "notes.txt"), "mine") << "files of other names stay";
  expect_refused(testing::run_zerotune("export --model_name_or_path " + kModel.string() + " --output_dir " +
                                           kModel.string() + " --overwrite_output_dir",
                                       dir_),
                 "is the folder of --model_name_or_path itself");
}

// A new folder appears whole: written beside as .NAME.partial and renamed at the end; an export
// that fails leaves neither.
TEST_F(ExportOutput, ANewFolderAppearsWholeOrNotAtAll) {
  const fs::path merged = dir_ / "merged";
  const testing::CliRun run = merge_into(merged);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"})
    EXPECT_TRUE(fs::is_regular_file(merged / file)) << file;
  EXPECT_FALSE(fs::exists(dir_ / ".merged.partial"));
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  ASSERT_EQ(merge_into(empty).exit_code, 0) << "an empty folder is no folder with files";
  EXPECT_TRUE(fs::is_regular_file(empty / "model.safetensors"));

  // An adapter whose matrices do not fit the model fails after the output was set up.
  std::ofstream(adapter_ / "adapter_model.safetensors", std::ios::trunc) << "not safetensors";
  const fs::path failed = dir_ / "failed";
  const testing::CliRun broken = merge_into(failed);
  EXPECT_NE(broken.exit_code, 0) << broken.output;
  EXPECT_FALSE(fs::exists(failed));
  EXPECT_FALSE(fs::exists(dir_ / ".failed.partial"));
}

// A LoRA checkpoint exports as an adapter: not into a model folder, where it would mix with the
// model's files. Refused before the checkpoint is read.
TEST_F(ExportOutput, AnAdapterIsNeverWrittenIntoAModelFolder) {
  const fs::path checkpoint = dir_ / "run/checkpoint-2";
  fs::create_directories(checkpoint);
  fs::copy_file(kAdapter / "adapter_config.json", checkpoint / "adapter_config.json");
  const fs::path model = dir_ / "model";
  fs::copy(kModel, model, fs::copy_options::recursive);
  expect_refused(testing::run_zerotune("export --checkpoint " + checkpoint.string() + " --output_dir " +
                                           model.string() + " --overwrite_output_dir",
                                       dir_),
                 "holds a model (config.json)");
}

TEST_F(ExportOutput, ADtypeThatIsNoFloatingPointTypeIsUsage) {
  expect_refused(merge_into(dir_ / "merged", " --dtype int32"), "--dtype int32: the weights need a floating-point");
  EXPECT_FALSE(fs::exists(dir_ / "merged"));
}

}  // namespace
}  // namespace zt
