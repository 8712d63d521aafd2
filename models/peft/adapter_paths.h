// Paths of the files in an adapter or checkpoint folder, and its JSON configs read.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/config/config_json.h"

namespace zt::models {

// dir/file.
std::string path_in(const std::string& dir, const char* file);

// dir/file, which must be a regular file; otherwise zt::Error "no <file> in '<dir>'" followed by
// `hint` (what the folder was expected to be).
std::string existing_file_in(const std::string& dir, const char* file, const std::string& hint);

// The JSON file dir/file (which must exist, as above), read, and its keys, whose errors name it.
struct FolderJson {
  FolderJson(const std::string& dir, const char* file, const std::string& hint);
  FolderJson(const FolderJson&) = delete;  // keys refers to json
  FolderJson& operator=(const FolderJson&) = delete;

  const std::string path;
  const nlohmann::ordered_json json;
  const detail::ConfigKeys keys;
};

}  // namespace zt::models
