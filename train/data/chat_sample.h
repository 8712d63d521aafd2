// One chat sample of a data file into a Conversation: alpaca's fields, or the turns of
// ShareGPT (`from`/`value`) and OpenAI (`role`/`content`) with their tool calls, tool results
// and tools. Used by dataset.cpp, which reads the file and checks its format.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "train/data/dataset.h"

namespace zt::train {

// Where a sample came from, for messages.
struct SampleSource {
  const std::string& path;
  std::size_t index;
  std::size_t line;  // 0 for a JSON array
  std::string str() const;
};

// The string at `key`; "" when absent or null and not `required`, an error otherwise.
std::string text_field(const nlohmann::ordered_json& sample, const char* key, const SampleSource& where, bool required);

Conversation from_alpaca(const nlohmann::ordered_json& sample, const SampleSource& where);
Conversation from_sharegpt(const nlohmann::ordered_json& sample, const SampleSource& where);

}  // namespace zt::train
