// A mistyped --model_name_or_path, as a user types it: a path that looks local (it starts with
// / . ~, has more than one /, or its first part exists) is no such folder, with the closest
// name beside it, and never goes to the network; a bare name close to a local folder, which
// transformers reads as a hub id, gets that folder named after the hub's answer.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

// Nothing listens on port 9 (discard): a hub request fails at once.
const std::string kNoHub = "HF_ENDPOINT=http://127.0.0.1:9 HF_HUB_OFFLINE=0";

class ModelPath : public testing::FolderTest {
 protected:
  void SetUp() override {
    FolderTest::SetUp();
    cwd_ = fs::current_path();
    fs::create_directories(dir_ / "models");
    fs::copy(fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen", dir_ / "models/tiny-qwen", fs::copy_options::recursive);
    fs::current_path(dir_);  // the relative paths below are typed from here, as a user would
  }
  void TearDown() override {
    fs::current_path(cwd_);
    FolderTest::TearDown();
  }
  testing::CliRun generate(const std::string& model) {
    return testing::run_zerotune("generate --device cpu --prompt hi --max_new_tokens 2 --model_name_or_path " + model,
                                 dir_, kNoHub + " HF_HUB_CACHE=" + (dir_ / "hub").string());
  }
  static void expect_no_such_folder(const testing::CliRun& run, const std::string& said) {
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_NE(run.output.find(said), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("download"), std::string::npos) << "a local path went to the network: " << run.output;
  }
  fs::path cwd_;
};

TEST_F(ModelPath, ALocalLookingPathIsNoSuchFolderWithTheClosestName) {
  ASSERT_EQ(generate("models/tiny-qwen").exit_code, 0);
  // org/name in form, but ./models exists: a path.
  expect_no_such_folder(generate("models/tiny-qwn"),
                        "no such folder: models/tiny-qwn (models has no tiny-qwn; did you mean models/tiny-qwen?)");
  expect_no_such_folder(generate("./modles/tiny-qwen"), "the current folder has no modles; did you mean ./models?");
  expect_no_such_folder(generate((dir_ / "models/tiny-qwen/x/y").string()),
                        (dir_ / "models/tiny-qwen").string() + " has no x");
  expect_no_such_folder(generate("models/tiny-qwen/config.json"), "is a file, not a model folder");
}

TEST_F(ModelPath, AHubIdThatFailsNamesALocalFolderItMayMean) {
  fs::current_path(dir_ / "models");
  const testing::CliRun run = generate("tiny-qwn");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("cannot download config.json of tiny-qwn"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("Or did you mean the local folder ./tiny-qwen?"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace zt
