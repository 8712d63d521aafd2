#include "runtime/user_paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "runtime/error.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

// What is at `path` (links followed); a path that cannot be looked at (a folder on the way
// without search permission) is an error naming why.
fs::file_status status_of(const std::string& path, const std::string& what) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error && status.type() != fs::file_type::not_found)
    fail(what + " " + path + " cannot be looked at: " + error.message());
  return status;
}

void require_access(const std::string& folder, int mode, const std::string& what, const std::string& path) {
  if (::access(folder.c_str(), mode) == 0) return;
  const std::string reason = std::strerror(errno);
  fail(what + " " + path + ": " + (folder == path ? std::string("the folder") : "the folder " + folder) +
       " cannot be written into (" + reason + "); choose a folder you can write to");
}

// The nearest folder on the way to `path` that exists, which creating `path` would write
// into; an existing file on the way makes the path impossible to create.
std::string nearest_existing_folder(const fs::path& path, const std::string& what, const std::string& given) {
  std::error_code ignored;  // without a current folder, the path is taken as given
  fs::path ancestor = fs::absolute(path, ignored).lexically_normal();
  while (ancestor.has_relative_path() && !fs::exists(status_of(ancestor.string(), what)))
    ancestor = ancestor.parent_path();
  if (!fs::is_directory(status_of(ancestor.string(), what)))
    fail(what + " " + given + ": " + ancestor.string() + " is a file, so the path cannot be created");
  return ancestor.string();
}

}  // namespace

void require_readable_file(const std::string& path, const std::string& what) {
  const fs::file_status status = status_of(path, what);
  ZT_REQUIRE(fs::exists(status), what + " " + path + " does not exist: check the path");
  ZT_REQUIRE(!fs::is_directory(status), what + " " + path + " is a folder; give the file in it");
  if (::access(path.c_str(), R_OK) != 0) fail(what + " " + path + " cannot be read (" + std::strerror(errno) + ")");
}

void require_existing_folder(const std::string& path, const std::string& what) {
  const fs::file_status status = status_of(path, what);
  ZT_REQUIRE(fs::exists(status), what + " " + path + " does not exist: check the path");
  ZT_REQUIRE(fs::is_directory(status), what + " " + path + " is a file, not a folder");
}

void require_writable_folder(const std::string& path, const std::string& what) {
  const fs::file_status status = status_of(path, what);
  if (fs::exists(status)) {
    ZT_REQUIRE(fs::is_directory(status), what + " " + path + " is a file, not a folder; choose another path");
    return require_access(path, W_OK | X_OK, what, path);
  }
  require_access(nearest_existing_folder(path, what, path), W_OK | X_OK, what, path);
}

void require_writable_file(const std::string& path, const std::string& what) {
  const fs::file_status status = status_of(path, what);
  ZT_REQUIRE(!fs::is_directory(status), what + " " + path + " is a folder; give a file name");
  if (fs::exists(status) && ::access(path.c_str(), W_OK) != 0)
    fail(what + " " + path + " cannot be written (" + std::strerror(errno) + ")");
  std::error_code ignored;
  const fs::path folder = fs::absolute(fs::path(path), ignored).lexically_normal().parent_path();
  require_access(nearest_existing_folder(folder, what, path), W_OK | X_OK, what, path);
}

}  // namespace zt
