#include "train/data/dataset.h"

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "runtime/error.h"
#include "runtime/json_text.h"
#include "train/data/chat_sample.h"

namespace zt::train {
namespace {

using json = nlohmann::ordered_json;

std::optional<DataFormat> format_of(const json& sample) {
  if (!sample.is_object()) return std::nullopt;
  if (sample.contains("instruction")) return DataFormat::kAlpaca;
  if (sample.contains("conversations") || sample.contains("messages")) return DataFormat::kShareGpt;
  if (sample.contains("text")) return DataFormat::kText;
  return std::nullopt;
}

DataFormat detect(const json& sample, const std::string& path) {
  if (std::optional<DataFormat> format = format_of(sample)) return *format;
  fail(path + ": cannot tell the data format from the first sample " + sample.dump().substr(0, 200) +
       "; expected alpaca (\"instruction\", \"input\", \"output\"), ShareGPT (\"conversations\" or "
       "\"messages\") or plain text (\"text\")");
}

// A file mixing formats is refused: the first odd sample would otherwise be read as the
// first sample's format and fail with a message about a missing field.
void require_format(const json& sample, DataFormat format, const SampleSource& where) {
  const std::optional<DataFormat> own = format_of(sample);
  if (own == format) return;
  fail(where.str() + (own ? " is " + format_name(*own) : std::string(" has none of the keys that name a format")) +
       " but the file's first sample is " + format_name(format) +
       "; a file holds one format: split it into one file per format");
}

// What makes a sample more than text, as LLaMA-Factory lays multimodal data out: a non-empty
// `images`, `videos` or `audios` list, or a message content part that is not text.
std::optional<std::string> media_of(const json& sample) {
  if (!sample.is_object()) return std::nullopt;
  for (const char* key : {"images", "videos", "audios"})
    if (sample.contains(key) && sample[key].is_array() && !sample[key].empty())
      return std::string("\"").append(key).append("\"");
  for (const char* list : {"messages", "conversations"}) {
    if (!sample.contains(list) || !sample[list].is_array()) continue;
    for (const json& turn : sample[list])
      for (const char* key : {"content", "value"})
        if (turn.is_object() && turn.contains(key) && turn[key].is_array())
          for (const json& part : turn[key])
            if (part.is_object() && part.value("type", "") != "text")
              return "content parts of type " + part.value("type", json("(none)")).dump();
  }
  return std::nullopt;
}

// Refuses the file when samples carry media, counting them by what they carry.
void refuse_media(const std::vector<std::pair<json, std::size_t>>& samples, const std::string& path) {
  struct Count {
    std::size_t samples = 0;
    std::size_t first = 0;
  };
  std::map<std::string, Count> counts;
  std::size_t with_media = 0;
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (std::optional<std::string> media = media_of(samples[i].first)) {
      Count& count = counts[*media];
      if (count.samples++ == 0) count.first = i;
      ++with_media;
    }
  if (counts.empty()) return;
  std::string found;
  for (const auto& [what, count] : counts)
    found += (found.empty() ? "" : "; ") + what + " in " + std::to_string(count.samples) + ", the first sample " +
             std::to_string(count.first);
  fail(path + ": " + std::to_string(with_media) + " of " + std::to_string(samples.size()) +
       " samples carry images, videos or audio (" + found +
       "); zerotune trains on text only: remove those samples, or the key where the text does not refer to the media");
}

// JSON Lines: one object per non-blank line.
std::vector<std::pair<json, std::size_t>> read_json_lines(std::string_view text, const std::string& path) {
  std::vector<std::pair<json, std::size_t>> samples;
  std::istringstream in{std::string(text)};
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    samples.emplace_back(parse_json<json>(line, path, nullptr, number), number);
  }
  return samples;
}

std::vector<std::pair<json, std::size_t>> read_samples(std::string_view text, const std::string& path) {
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text[start] != '[') return read_json_lines(text, path);
  json array = parse_json<json>(text, path);
  std::vector<std::pair<json, std::size_t>> samples;
  for (json& sample : array) samples.emplace_back(std::move(sample), 0);
  return samples;
}

}  // namespace

std::string format_name(DataFormat format) {
  switch (format) {
    case DataFormat::kAlpaca:
      return "alpaca (\"instruction\")";
    case DataFormat::kShareGpt:
      return "ShareGPT (\"conversations\" or \"messages\")";
    case DataFormat::kText:
      return "plain text (\"text\")";
  }
  return "";
}

Dataset parse_dataset(std::string_view text, const std::string& path) {
  const std::vector<std::pair<json, std::size_t>> samples = read_samples(text, path);
  ZT_REQUIRE(!samples.empty(), path + " holds no samples");
  refuse_media(samples, path);
  Dataset dataset;
  dataset.format = detect(samples.front().first, path);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleSource where{path, i, samples[i].second};
    const json& sample = samples[i].first;
    ZT_REQUIRE(sample.is_object(), where.str() + " is not a JSON object");
    require_format(sample, dataset.format, where);
    if (dataset.format == DataFormat::kText)
      dataset.texts.push_back(text_field(sample, "text", where, true));
    else
      dataset.samples.push_back(dataset.format == DataFormat::kAlpaca ? from_alpaca(sample, where)
                                                                      : from_sharegpt(sample, where));
  }
  return dataset;
}

Dataset load_dataset(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in, "cannot read the data file " + path + ": check the path");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_dataset(text, path);
}

}  // namespace zt::train
