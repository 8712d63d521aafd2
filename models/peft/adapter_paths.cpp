#include "models/peft/adapter_paths.h"

#include <filesystem>

#include "models/config/config.h"
#include "runtime/error.h"

namespace zt::models {

std::string path_in(const std::string& dir, const char* file) { return (std::filesystem::path(dir) / file).string(); }

std::string existing_file_in(const std::string& dir, const char* file, const std::string& hint) {
  std::string path = path_in(dir, file);
  ZT_REQUIRE(std::filesystem::is_regular_file(path), "no " + std::string(file) + " in '" + dir + "'" + hint);
  return path;
}

FolderJson::FolderJson(const std::string& dir, const char* file, const std::string& hint)
    : path(existing_file_in(dir, file, hint)), json(read_json_file(path)), keys(json, path) {}

}  // namespace zt::models
