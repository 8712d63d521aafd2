// Fuzzes training data reading (alpaca, ShareGPT, OpenAI messages, plain text; a JSON array
// or JSON Lines) with arbitrary text. zt::Error is the expected rejection; anything else
// escaping, a sanitizer report, or an accepted sample the chat template could not take is a
// finding.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "train/data/dataset.h"

namespace zr = zt::train;
using zt::fuzz::require;

namespace {

bool known_role(const std::string& role) {
  return role == "system" || role == "user" || role == "assistant" || role == "tool";
}

// A conversation as the chat template expects it: known roles, the system message only
// first, the assistant's answer last, tool calls with a name and JSON arguments.
void check_conversation(const zr::Conversation& c) {
  require(!c.messages.empty() && c.messages.back().role == "assistant");
  for (std::size_t i = 0; i < c.messages.size(); ++i) {
    const auto& message = c.messages[i];
    require(known_role(message.role) && (message.role != "system" || i == 0));
    for (const auto& call : message.tool_calls)
      require(!call.name.empty() && !nlohmann::json::parse(call.arguments, nullptr, false).is_discarded());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const auto dataset = zt::fuzz::accepted([&] { return zr::parse_dataset(text, "data.json"); });
  if (!dataset) return 0;
  require(dataset->size() > 0);
  if (dataset->format == zr::DataFormat::kText) {
    require(dataset->samples.empty());
  } else {
    require(dataset->texts.empty());
    for (const auto& conversation : dataset->samples) check_conversation(conversation);
  }
  return 0;
}
