// Training data as users have it: alpaca JSON (`instruction`, `input`, `output`, optional
// `system` and `history`), ShareGPT JSON (`conversations` of `{from, value}` or OpenAI's
// `messages` of `{role, content}`) or plain text (`{"text": ...}`, a pre-training document),
// as one JSON array or JSON Lines. A chat sample becomes a Conversation, which the chat
// template turns into tokens later; a text sample stays text, tokenized without a template.
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

enum class DataFormat { kAlpaca, kShareGpt, kText };

struct Dataset {
  DataFormat format = DataFormat::kAlpaca;
  std::vector<Conversation> samples;  // alpaca and ShareGPT
  std::vector<std::string> texts;     // plain text
  std::size_t size() const { return format == DataFormat::kText ? texts.size() : samples.size(); }
};

// Reads `path`. The format is detected from the first sample's keys and every sample must
// follow it; a malformed sample, or one of another format, is an error naming the file, the
// sample's index (and line for JSON Lines) and what is wrong.
Dataset load_dataset(const std::string& path);

}  // namespace zt::train
