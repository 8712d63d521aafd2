// The checks of user paths: what is wrong with a path is said with the path and its purpose,
// before any work, and never as std::filesystem's "filesystem error: ...".
#include "runtime/user_paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::expect_mentions;

class UserPaths : public testing::FolderTest {
 protected:
  void SetUp() override {
    FolderTest::SetUp();
    std::ofstream(dir_ / "file.txt") << "x";
    fs::create_directories(dir_ / "folder");
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
};

TEST_F(UserPaths, AReadableFileExistsAndIsNoFolder) {
  EXPECT_EQ(error_of([&] { require_readable_file(path("file.txt"), "data file"); }), "no error");
  expect_mentions(error_of([&] { require_readable_file(path("absent.json"), "data file"); }),
                  {"data file ", "absent.json does not exist"});
  expect_mentions(error_of([&] { require_readable_file(path("folder"), "data file"); }), {"folder is a folder"});
}

TEST_F(UserPaths, AnExistingFolderIsNoFile) {
  EXPECT_EQ(error_of([&] { require_existing_folder(path("folder"), "--resume_from_checkpoint"); }), "no error");
  expect_mentions(error_of([&] { require_existing_folder(path("file.txt"), "--resume_from_checkpoint"); }),
                  {"--resume_from_checkpoint ", "file.txt is a file, not a folder"});
  expect_mentions(error_of([&] { require_existing_folder(path("gone"), "--resume_from_checkpoint"); }),
                  {"gone does not exist"});
}

TEST_F(UserPaths, AWritableFolderExistsOrCanBeCreated) {
  EXPECT_EQ(error_of([&] { require_writable_folder(path("folder"), "--output_dir"); }), "no error");
  EXPECT_EQ(error_of([&] { require_writable_folder(path("new/deeper/out"), "--output_dir"); }), "no error");
  EXPECT_FALSE(fs::exists(dir_ / "new")) << "a check creates nothing";
  expect_mentions(error_of([&] { require_writable_folder(path("file.txt"), "--output_dir"); }),
                  {"--output_dir ", "file.txt is a file, not a folder"});
  const std::string under_file = error_of([&] { require_writable_folder(path("file.txt/out"), "--output_dir"); });
  expect_mentions(under_file, {"file.txt/out: ", "file.txt is a file, so the path cannot be created"});
  EXPECT_EQ(under_file.find("filesystem error"), std::string::npos) << under_file;
}

TEST_F(UserPaths, AWritableFileIsNoFolderAndItsFolderCanBeWritten) {
  EXPECT_EQ(error_of([&] { require_writable_file(path("out.jsonl"), "--output_file"); }), "no error");
  EXPECT_EQ(error_of([&] { require_writable_file(path("file.txt"), "--output_file"); }), "no error");
  expect_mentions(error_of([&] { require_writable_file(path("folder"), "--output_file"); }),
                  {"--output_file ", "folder is a folder"});
  expect_mentions(error_of([&] { require_writable_file(path("file.txt/out.jsonl"), "--output_file"); }),
                  {"file.txt is a file, so the path cannot be created"});
}

// Permissions bind everyone but root, whom the kernel lets write anywhere.
TEST_F(UserPaths, AFolderWithoutWritePermissionIsRefused) {
  fs::create_directories(dir_ / "locked");
  ::chmod(path("locked").c_str(), 0500);
  const std::string message = error_of([&] { require_writable_folder(path("locked/out"), "--output_dir"); });
  ::chmod(path("locked").c_str(), 0700);
  if (::geteuid() == 0) {
    EXPECT_EQ(message, "no error");
  } else {
    expect_mentions(message, {"--output_dir ", "locked/out", "cannot be written into (Permission denied)"});
  }
}

}  // namespace
}  // namespace zt
