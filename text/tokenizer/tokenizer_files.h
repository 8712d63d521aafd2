// Reading the files of a tokenizer, with errors that name the file.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace zt::models {

// The whole file; an error names it when it cannot be read.
std::string read_tokenizer_file(const std::string& path);

// A JSON file, parsed without keeping key order (vocabularies have 150k keys).
nlohmann::json read_tokenizer_json(const std::string& path);

// JSON text read from `source`, parsed as above; an error names `source` when it is malformed.
nlohmann::json parse_tokenizer_json_text(std::string_view text, const std::string& source);

bool tokenizer_file_exists(const std::string& path);

}  // namespace zt::models
