#include "train/data/dataset.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "runtime/error.h"

namespace zt::train {
namespace {

using nlohmann::json;

// Where a sample came from, for messages.
struct SampleSource {
  const std::string& path;
  std::size_t index;
  std::size_t line;  // 0 for a JSON array
  std::string str() const {
    return path + ": sample " + std::to_string(index) + (line ? " (line " + std::to_string(line) + ")" : "");
  }
};

std::string text_field(const json& sample, const char* key, const SampleSource& where, bool required) {
  if (!sample.contains(key) || sample[key].is_null()) {
    ZT_REQUIRE(!required, where.str() + " has no \"" + key + "\"");
    return "";
  }
  ZT_REQUIRE(sample[key].is_string(), where.str() + ": \"" + key + "\" must be a string, got " + sample[key].dump());
  return sample[key].get<std::string>();
}

Conversation from_alpaca(const json& sample, const SampleSource& where) {
  Conversation conversation;
  if (std::string system = text_field(sample, "system", where, false); !system.empty())
    conversation.messages.push_back({"system", system});
  if (sample.contains("history") && !sample["history"].is_null()) {
    ZT_REQUIRE(sample["history"].is_array(), where.str() + ": \"history\" must be a list of [prompt, answer] pairs");
    for (const json& turn : sample["history"]) {
      ZT_REQUIRE(turn.is_array() && turn.size() == 2 && turn[0].is_string() && turn[1].is_string(),
                 where.str() + ": every \"history\" entry must be a [prompt, answer] pair of strings");
      conversation.messages.push_back({"user", turn[0].get<std::string>()});
      conversation.messages.push_back({"assistant", turn[1].get<std::string>()});
    }
  }
  std::string prompt = text_field(sample, "instruction", where, true);
  if (std::string input = text_field(sample, "input", where, false); !input.empty()) prompt += "\n" + input;
  conversation.messages.push_back({"user", prompt});
  conversation.messages.push_back({"assistant", text_field(sample, "output", where, true)});
  return conversation;
}

std::string sharegpt_role(const std::string& speaker, const SampleSource& where) {
  if (speaker == "human" || speaker == "user") return "user";
  if (speaker == "gpt" || speaker == "assistant" || speaker == "model") return "assistant";
  if (speaker == "system") return "system";
  fail(where.str() + ": unknown speaker \"" + speaker + "\"; accepted: human/user, gpt/assistant, system");
}

Conversation from_sharegpt(const json& sample, const SampleSource& where) {
  const bool openai = sample.contains("messages");
  const char* list_key = openai ? "messages" : "conversations";
  const char* role_key = openai ? "role" : "from";
  const char* text_key = openai ? "content" : "value";
  ZT_REQUIRE(sample[list_key].is_array() && !sample[list_key].empty(),
             where.str() + ": \"" + list_key + "\" must be a non-empty list of turns");
  Conversation conversation;
  if (std::string system = text_field(sample, "system", where, false); !system.empty())
    conversation.messages.push_back({"system", system});
  for (const json& turn : sample[list_key]) {
    ZT_REQUIRE(turn.is_object(),
               where.str() + ": every turn must be an object with \"" + role_key + "\" and \"" + text_key + "\"");
    Message message{sharegpt_role(text_field(turn, role_key, where, true), where),
                    text_field(turn, text_key, where, true)};
    ZT_REQUIRE(message.role != "system" || conversation.messages.empty(),
               where.str() + ": a system turn may only come first");
    conversation.messages.push_back(message);
  }
  std::size_t first = conversation.messages.front().role == "system" ? 1 : 0;
  for (std::size_t i = first; i < conversation.messages.size(); ++i) {
    const char* expected = (i - first) % 2 == 0 ? "user" : "assistant";
    ZT_REQUIRE(conversation.messages[i].role == expected,
               where.str() + ": turn " + std::to_string(i - first) + " is from " + conversation.messages[i].role +
                   " but should be from " + expected + " (turns alternate user, assistant, ...)");
  }
  ZT_REQUIRE(conversation.messages.back().role == "assistant", where.str() + ": the last turn must be the assistant's");
  return conversation;
}

std::optional<DataFormat> format_of(const json& sample) {
  if (!sample.is_object()) return std::nullopt;
  if (sample.contains("instruction")) return DataFormat::kAlpaca;
  if (sample.contains("conversations") || sample.contains("messages")) return DataFormat::kShareGpt;
  if (sample.contains("text")) return DataFormat::kText;
  return std::nullopt;
}

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

// JSON Lines: one object per non-blank line.
std::vector<std::pair<json, std::size_t>> read_json_lines(const std::string& text, const std::string& path) {
  std::vector<std::pair<json, std::size_t>> samples;
  std::istringstream in(text);
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json sample = json::parse(line, nullptr, false);
    ZT_REQUIRE(!sample.is_discarded(), path + ": line " + std::to_string(number) + " is not valid JSON");
    samples.emplace_back(std::move(sample), number);
  }
  return samples;
}

}  // namespace

Dataset load_dataset(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in, "cannot read the data file " + path + ": check the path");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<json, std::size_t>> samples;
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && text[start] == '[') {
    json array = json::parse(text, nullptr, false);
    ZT_REQUIRE(!array.is_discarded(), path + " is not valid JSON (a JSON array of samples was expected)");
    for (json& sample : array) samples.emplace_back(std::move(sample), 0);
  } else {
    samples = read_json_lines(text, path);
  }
  ZT_REQUIRE(!samples.empty(), path + " holds no samples");
  Dataset dataset;
  dataset.format = detect(samples.front().first, path);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    SampleSource where{path, i, samples[i].second};
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

}  // namespace zt::train
