// Reading the files of a tokenizer, with errors that name the file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace zt::models {

// The whole file; an error names it when it cannot be read.
std::string read_tokenizer_file(const std::string& path);

// A JSON file, parsed without keeping key order (vocabularies have 150k keys).
nlohmann::json read_tokenizer_json(const std::string& path);

bool tokenizer_file_exists(const std::string& path);

}  // namespace zt::models
