// generate and export check the paths they will write before they load a model: a folder that
// holds no model at all still gets the message about the output path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/process_test_util.h"

namespace zt {
namespace {

class ChecksBeforeLoading : public testing::FolderTest {
 protected:
  void SetUp() override {
    FolderTest::SetUp();
    std::ofstream(dir_ / "a_file") << "x";
    std::filesystem::create_directories(dir_ / "a_folder");
    std::filesystem::create_directories(dir_ / "no_model");  // a folder that holds no model
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void expect_refused(const std::string& arguments, const std::string& message) {
    const testing::CliRun run = testing::run_zerotune(arguments, dir_);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_NE(run.output.find(message), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("no_model/"), std::string::npos) << run.output;  // nothing of the model was read
  }
};

TEST_F(ChecksBeforeLoading, GenerateChecksItsOutputFile) {
  const std::string generate = "generate --device cpu --prompt hi --model_name_or_path " + path("no_model");
  expect_refused(generate + " --output_file " + path("a_folder"), "--output_file " + path("a_folder") + " is a folder");
  expect_refused(generate + " --output_file " + path("a_file/out.jsonl"),
                 path("a_file") + " is a file, so the path cannot be created");
}

TEST_F(ChecksBeforeLoading, ExportChecksItsOutputFolder) {
  const std::string exported = "export --model_name_or_path " + path("no_model");
  expect_refused(exported + " --output_dir " + path("a_file"), "--output_dir " + path("a_file") + " is a file");
  expect_refused(exported + " --output_dir " + path("a_file/out"),
                 path("a_file") + " is a file, so the path cannot be created");
}

}  // namespace
}  // namespace zt
