// The records of a data file, as users write them: one JSON array of objects, or JSON Lines
// (one object per non-blank line). Shared by the SFT reader (dataset.h) and the preference
// reader (preference_data.h), which turn each record into a sample of their own.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace zt::train {

struct JsonRecord {
  nlohmann::ordered_json value;
  std::size_t line = 0;  // its line in a JSON Lines file; 0 in a JSON array
};

// The file's records in order; a parse error names the file (and the line for JSON Lines).
std::vector<JsonRecord> read_json_records(std::string_view text, const std::string& path);

// The file's text; an error naming the file when it cannot be read, or is of a kind zerotune does
// not read (CSV, Parquet, Arrow).
std::string read_data_file(const std::string& path);

// Refuses the file when records carry images, videos or audio (LLaMA-Factory's `images`,
// `videos` and `audios` lists, or message content parts that are not text), counting them by
// what they carry: zerotune trains on text.
void refuse_media(const std::vector<JsonRecord>& records, const std::string& path);

}  // namespace zt::train
