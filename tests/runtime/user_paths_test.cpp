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
  // What `check` says of `name` in the test's folder given as `what` ("no error" if nothing).
  using Check = void (*)(const std::string&, const std::string&);
  std::string said(Check check, const std::string& name, const std::string& what) const {
    return error_of([&] { check(path(name), what); });
  }
};

TEST_F(UserPaths, AReadableFileExistsAndIsNoFolder) {
  EXPECT_EQ(said(require_readable_file, "file.txt", "data file"), "no error");
  expect_mentions(said(require_readable_file, "absent.json", "data file"),
                  {"data file ", "absent.json does not exist"});
  expect_mentions(said(require_readable_file, "folder", "data file"), {"folder is a folder"});
}

TEST_F(UserPaths, AnExistingFolderIsNoFile) {
  EXPECT_EQ(said(require_existing_folder, "folder", "--resume_from_checkpoint"), "no error");
  expect_mentions(said(require_existing_folder, "file.txt", "--resume_from_checkpoint"),
                  {"--resume_from_checkpoint ", "file.txt is a file, not a folder"});
  expect_mentions(said(require_existing_folder, "gone", "--resume_from_checkpoint"), {"gone does not exist"});
}

TEST_F(UserPaths, AWritableFolderExistsOrCanBeCreated) {
  EXPECT_EQ(said(require_writable_folder, "folder", "--output_dir"), "no error");
  EXPECT_EQ(said(require_writable_folder, "new/deeper/out", "--output_dir"), "no error");
  EXPECT_FALSE(fs::exists(dir_ / "new")) << "a check creates nothing";
  expect_mentions(said(require_writable_folder, "file.txt", "--output_dir"),
                  {"--output_dir ", "file.txt is a file, not a folder"});
  const std::string under_file = said(require_writable_folder, "file.txt/out", "--output_dir");
  expect_mentions(under_file, {"file.txt/out: ", "file.txt is a file, so the path cannot be created"});
  EXPECT_EQ(under_file.find("filesystem error"), std::string::npos) << under_file;
}

TEST_F(UserPaths, AWritableFileIsNoFolderAndItsFolderCanBeWritten) {
  EXPECT_EQ(said(require_writable_file, "out.jsonl", "--output_file"), "no error");
  EXPECT_EQ(said(require_writable_file, "file.txt", "--output_file"), "no error");
  expect_mentions(said(require_writable_file, "folder", "--output_file"), {"--output_file ", "folder is a folder"});
  expect_mentions(said(require_writable_file, "file.txt/out.jsonl", "--output_file"),
                  {"file.txt is a file, so the path cannot be created"});
}

// Permissions bind everyone but root, whom the kernel lets write anywhere.
TEST_F(UserPaths, AFolderWithoutWritePermissionIsRefused) {
  fs::create_directories(dir_ / "locked");
  ::chmod(path("locked").c_str(), 0500);
  const std::string message = said(require_writable_folder, "locked/out", "--output_dir");
  ::chmod(path("locked").c_str(), 0700);
  if (::geteuid() == 0) {
    EXPECT_EQ(message, "no error");
  } else {
    expect_mentions(message, {"--output_dir ", "locked/out", "cannot be written into (Permission denied)"});
  }
}

}  // namespace
}  // namespace zt
