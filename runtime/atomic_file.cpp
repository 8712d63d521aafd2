#include "runtime/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>
#include <utility>

#include "runtime/error.h"

namespace zt {
namespace {

std::string errno_text(int error_number) { return std::generic_category().message(error_number); }

std::string parent_directory(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Hidden, and unique per process and call, so concurrent writers of one target never share
// a temporary file; a stale one from a crashed process is skipped by O_EXCL.
std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  auto slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return directory + "." + base + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

void sync_directory(const std::string& directory, const std::string& target) {
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("wrote '" + target + "' but cannot open its directory to sync it: " + errno_text(errno));
  int result = ::fsync(fd);
  int error_number = errno;
  ::close(fd);
  // Some filesystems cannot sync a directory and say so with EINVAL; the rename stands.
  if (result != 0 && error_number != EINVAL)
    fail("wrote '" + target + "' but syncing its directory failed: " + errno_text(error_number));
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty() || path_.back() == '/') fail("cannot write '" + path_ + "': the path names no file");
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_path_ = temporary_name(path_);
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0)
    fail("cannot write '" + path_ + "': creating the temporary file '" + temp_path_ + "' failed: " + errno_text(errno) +
         "; check that the directory exists and is writable");
}

AtomicFile::~AtomicFile() { abandon(); }

void AtomicFile::write(const void* data, std::size_t size) {
  require_open("write to");
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most about 2 GiB per call; larger buffers go in pieces.
    ssize_t written = ::write(fd_, bytes, std::min<std::size_t>(size, std::size_t{1} << 30));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) fail_abandoning("writing", written < 0 ? errno : EIO);
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
}

void AtomicFile::commit() {
  require_open("commit");
  if (::fsync(fd_) != 0) fail_abandoning("syncing", errno);
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    int error_number = errno;
    ::unlink(temp_path_.c_str());
    fail("cannot write '" + path_ + "': closing the temporary file failed: " + errno_text(error_number));
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    int error_number = errno;
    ::unlink(temp_path_.c_str());
    fail("cannot write '" + path_ + "': renaming '" + temp_path_ + "' over it failed: " + errno_text(error_number));
  }
  sync_directory(parent_directory(path_), path_);
}

void AtomicFile::fail_abandoning(const std::string& what, int error_number) {
  abandon();
  fail("cannot write '" + path_ + "': " + what + " the temporary file '" + temp_path_ +
       "' failed: " + errno_text(error_number) + "; the previous file, if any, is unchanged");
}

void AtomicFile::abandon() noexcept {
  if (fd_ < 0) return;
  ::close(std::exchange(fd_, -1));
  ::unlink(temp_path_.c_str());
}

void AtomicFile::require_open(const char* operation) const {
  if (fd_ < 0) fail("cannot " + std::string(operation) + " '" + path_ + "': it was already committed or abandoned");
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace zt
