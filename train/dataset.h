// Training data as users have it: alpaca JSON (`instruction`, `input`, `output`, optional
// `system` and `history`) or ShareGPT JSON (`conversations` of `{from, value}` or `messages`
// of `{role, content}`), as one JSON array or JSON Lines. Every sample becomes a
// Conversation; the chat template turns it into tokens later.
#pragma once

#include <string>
#include <vector>

namespace zt::train {

struct Message {
  std::string role;  // system | user | assistant
  std::string content;
};

struct Conversation {
  std::vector<Message> messages;  // an optional system message first, then user/assistant turns
};

enum class DataFormat { kAlpaca, kShareGpt };

struct Dataset {
  DataFormat format = DataFormat::kAlpaca;
  std::vector<Conversation> samples;
};

// Reads `path`. The format is detected from the first sample's keys and every sample must
// follow it; a malformed sample is an error naming the file, the sample's index (and line
// for JSON Lines) and what is wrong.
Dataset load_dataset(const std::string& path);

}  // namespace zt::train
