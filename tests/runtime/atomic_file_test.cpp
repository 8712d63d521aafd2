// AtomicFile: the target holds the old bytes or the new ones, and no temporary file outlives
// a failure or an exception.
#include <gtest/gtest.h>

#include <stdexcept>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "tests/common/safetensors_test_util.h"

namespace zt {
namespace {

using testing::expect_error_mentioning;
using testing::read_bytes;
using testing::ScratchDir;
using testing::write_bytes;

TEST(AtomicFile, CommitReplacesTheTarget) {
  ScratchDir dir;
  write_bytes(dir.file("f"), "old");
  {
    AtomicFile file(dir.file("f"));
    file.write("new ");
    file.write("contents");
    EXPECT_EQ(read_bytes(dir.file("f")), "old");  // invisible until commit
    file.commit();
  }
  EXPECT_EQ(read_bytes(dir.file("f")), "new contents");
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"f"}));
}

TEST(AtomicFile, TemporaryFileSitsBesideTheTarget) {
  ScratchDir dir;
  AtomicFile file(dir.file("target.bin"));
  EXPECT_EQ(std::filesystem::path(file.temp_path()).parent_path(), std::filesystem::path(dir.str()));
  EXPECT_TRUE(std::filesystem::exists(file.temp_path()));
}

TEST(AtomicFile, ExceptionBeforeCommitKeepsTheOldFileAndRemovesTheTemporary) {
  ScratchDir dir;
  write_bytes(dir.file("f"), "old");
  try {
    AtomicFile file(dir.file("f"));
    file.write("half of the new");
    throw std::runtime_error("producer failed mid-write");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(read_bytes(dir.file("f")), "old");
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"f"}));
}

TEST(AtomicFile, UseAfterCommitIsAnError) {
  ScratchDir dir;
  AtomicFile file(dir.file("f"));
  file.commit();
  expect_error_mentioning([&] { file.write("more"); }, {dir.file("f"), "already committed"});
  expect_error_mentioning([&] { file.commit(); }, {dir.file("f"), "already committed"});
}

TEST(AtomicFile, UnwritableLocationsFailNamingPathAndReason) {
  ScratchDir dir;
  expect_error_mentioning([&] { AtomicFile file(dir.file("no/such/dir/f")); },
                          {dir.file("no/such/dir/f"), "No such file or directory"});
  expect_error_mentioning([&] { AtomicFile file(dir.str() + "/"); }, {"names no file"});
  std::filesystem::create_directory(dir.file("sub"));
  expect_error_mentioning([&] { write_file_atomically(dir.file("sub"), "x"); }, {dir.file("sub"), "renaming"});
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"sub"}));
}

TEST(AtomicFile, WriteFileAtomicallyCreatesAndReplaces) {
  ScratchDir dir;
  write_file_atomically(dir.file("f"), "one");
  EXPECT_EQ(read_bytes(dir.file("f")), "one");
  write_file_atomically(dir.file("f"), std::string("t\0o", 3));
  EXPECT_EQ(read_bytes(dir.file("f")), std::string("t\0o", 3));
}

}  // namespace
}  // namespace zt
