#include "train/data/json_records.h"

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "runtime/error.h"
#include "runtime/json_text.h"

namespace zt::train {
namespace {

// Parts that carry images, videos or audio (OpenAI's "image_url", "input_audio", v1's "image",
// ...). Other types zerotune does not read ("input_text") are refused by chat_sample.cpp naming
// the type, rather than counted here as media they are not.
bool is_media_part(const std::string& type) {
  return type.find("image") != std::string::npos || type.find("video") != std::string::npos ||
         type.find("audio") != std::string::npos;
}

using json = nlohmann::ordered_json;

// What makes a record more than text, as LLaMA-Factory lays multimodal data out: a non-empty
// `images`, `videos` or `audios` list, or a message content part of a media type.
std::optional<std::string> media_of(const json& record) {
  if (!record.is_object()) return std::nullopt;
  for (const char* key : {"images", "videos", "audios"})
    if (record.contains(key) && record[key].is_array() && !record[key].empty())
      return std::string("\"").append(key).append("\"");
  for (const char* list : {"messages", "conversations"}) {
    if (!record.contains(list) || !record[list].is_array()) continue;
    for (const json& turn : record[list])
      for (const char* key : {"content", "value"})
        if (turn.is_object() && turn.contains(key) && turn[key].is_array())
          for (const json& part : turn[key])
            if (part.is_object() && part.contains("type") && part["type"].is_string() &&
                is_media_part(part["type"].get<std::string>()))
              return "content parts of type " + part["type"].dump();
  }
  return std::nullopt;
}

std::vector<JsonRecord> read_json_lines(std::string_view text, const std::string& path) {
  std::vector<JsonRecord> records;
  std::istringstream in{std::string(text)};
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    records.push_back({parse_json<json>(line, path, nullptr, number), number});
  }
  return records;
}

// A file that is one JSON object written over several lines, as json.dump(indent=...) writes a
// dict, is neither JSON Lines nor an array of samples: read line by line, its first line would
// be said to end early. Refused saying what it is, naming a list in it that may hold the samples.
void refuse_one_object(std::string_view text, const std::string& path) {
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  if (text.substr(0, end).find('\n') == std::string_view::npos) return;  // one line: a JSON Lines record
  const json whole = json::parse(text, nullptr, false);
  if (whole.is_discarded() || !whole.is_object()) return;  // JSON Lines, or an error its lines locate
  std::string lists;
  for (const auto& [key, value] : whole.items())
    if (value.is_array()) lists += (lists.empty() ? "its \"" : ", \"") + key + "\"";
  fail(path +
       " holds one JSON object over several lines; zerotune reads a JSON array of samples ([{...}, {...}]) "
       "or JSON Lines (one sample per line): " +
       (lists.empty() ? "put the object in a list" : "write the samples (" + lists + " list) as the file"));
}

}  // namespace

std::vector<JsonRecord> read_json_records(std::string_view text, const std::string& path) {
  // A UTF-8 byte order mark (Windows editors write one) marks the encoding and is no text: the
  // array after it is still an array.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string_view::npos && text[start] == '{') refuse_one_object(text, path);
  if (start == std::string_view::npos || text[start] != '[') return read_json_lines(text, path);
  json array = parse_json<json>(text, path);
  std::vector<JsonRecord> records;
  for (json& record : array) records.push_back({std::move(record), 0});
  return records;
}

std::string read_data_file(const std::string& path) {
  for (const char* other : {".csv", ".tsv", ".parquet", ".arrow"})
    ZT_REQUIRE(!path.ends_with(other), path + " is a " + std::string(other + 1) +
                                           " file; zerotune reads data as JSON, JSON Lines or plain text (.txt, a "
                                           "text per line): convert it to JSON Lines, one sample per line");
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in, "cannot read the data file " + path + ": check the path");
  return {(std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()};
}

void refuse_media(const std::vector<JsonRecord>& records, const std::string& path) {
  struct Count {
    std::size_t samples = 0;
    std::size_t first = 0;
  };
  std::map<std::string, Count> counts;
  std::size_t with_media = 0;
  for (std::size_t i = 0; i < records.size(); ++i)
    if (std::optional<std::string> media = media_of(records[i].value)) {
      Count& count = counts[*media];
      if (count.samples++ == 0) count.first = i;
      ++with_media;
    }
  if (counts.empty()) return;
  std::string found;
  for (const auto& [what, count] : counts)
    found += (found.empty() ? "" : "; ") + what + " in " + std::to_string(count.samples) + ", the first sample " +
             std::to_string(count.first);
  fail(path + ": " + std::to_string(with_media) + " of " + std::to_string(records.size()) +
       " samples carry images, videos or audio (" + found +
       "); zerotune trains on text only: remove those samples, or the key where the text does not refer to the media");
}

}  // namespace zt::train
