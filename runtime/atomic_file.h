// Writing a file so that readers, and a crash or power loss, see either the old contents or
// the new, never a mixture: the bytes go to a temporary file in the same directory (so the
// final rename stays within one filesystem), which is fsync'ed, renamed over the target, and
// the directory fsync'ed so the rename itself is durable.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace zt {

class AtomicFile {
 public:
  // Creates the temporary file beside `path`; throws zt::Error naming both and errno's text.
  explicit AtomicFile(std::string path);
  // Without commit() the temporary file is removed and the target is left as it was: an
  // exception between open and commit cannot leave a half-written file behind.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends bytes. On failure (disk full, I/O error) the temporary file is removed at once and
  // zt::Error thrown; the object is then abandoned and further calls throw.
  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Makes the new contents durable and visible under `path()`.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail_abandoning(const std::string& what, int error_number);
  void abandon() noexcept;
  void require_open(const char* operation) const;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
};

// Replaces `path` with `bytes` atomically.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace zt
