// An exclusive lock on a file for as long as the object lives: flock(2), the lock Python's
// filelock takes, so zerotune processes (the ranks of one job) and huggingface_hub never
// download the same blob at once.
#pragma once

#include <filesystem>

namespace zt::models::hub {

class FileLock {
 public:
  // Blocks until the lock is held; throws zt::Error naming the file when it cannot be opened.
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace zt::models::hub
