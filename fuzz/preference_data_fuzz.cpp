// Fuzzes preference data reading (LLaMA-Factory's alpaca and ShareGPT ranking, TRL's
// standard, conversational and implicit-prompt layouts; a JSON array or JSON Lines) with
// arbitrary text, its layout detected and, from the first byte, read through a dataset_info.json
// entry's columns and tags. zt::Error is the expected rejection; anything else escaping, a
// sanitizer report, or an accepted pair the chat template could not take is a finding.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "train/data/preference_data.h"

namespace zr = zt::train;
using zt::fuzz::require;

namespace {

bool known_role(const std::string& role) {
  return role == "system" || role == "user" || role == "assistant" || role == "tool";
}

// An answer: the assistant's, saying something, its tool calls named with JSON arguments.
void check_answer(const zt::models::ChatMessage& answer) {
  require(answer.role == "assistant" && (!answer.content.empty() || !answer.tool_calls.empty()));
  for (const auto& call : answer.tool_calls)
    require(!call.name.empty() && !nlohmann::json::parse(call.arguments, nullptr, false).is_discarded());
}

// A prompt as the chat template takes it before an answer: known roles, the system message
// only first, a user turn (or tool results) last.
void check_pair(const zr::PreferenceConversation& pair) {
  const auto& messages = pair.prompt.messages;
  require(!messages.empty() && (messages.back().role == "user" || messages.back().role == "tool"));
  for (std::size_t i = 0; i < messages.size(); ++i)
    require(known_role(messages[i].role) && (messages[i].role != "system" || i == 0));
  check_answer(pair.chosen);
  check_answer(pair.rejected);
}

// The entry the first byte picks: none (detected), alpaca columns, or ShareGPT with OpenAI tags.
std::optional<zr::EntryColumns> columns_for(std::uint8_t pick) {
  const char* entries[] = {
      R"({"ranking": true, "columns": {"prompt": "instruction", "query": "input", "system": "system",
          "history": "history", "chosen": "chosen", "rejected": "rejected"}})",
      R"({"ranking": true, "formatting": "sharegpt", "columns": {"messages": "messages", "chosen": "chosen",
          "rejected": "rejected", "system": "system", "tools": "tools"}, "tags": {"role_tag": "role",
          "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant", "observation_tag": "tool",
          "function_tag": "function_call", "system_tag": "system"}})"};
  if (pick % 3 == 0) return std::nullopt;
  return zr::ranking_columns(nlohmann::json::parse(entries[pick % 3 - 1]), "entry");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::optional<zr::EntryColumns> columns = columns_for(data[0]);
  const std::string_view text = zt::fuzz::as_text(data + 1, size - 1);
  const auto dataset = zt::fuzz::accepted([&] { return zr::parse_preference_dataset(text, "pairs.json", columns); });
  if (!dataset) return 0;
  require(!dataset->pairs.empty());
  for (const auto& pair : dataset->pairs) check_pair(pair);
  zr::identical_pairs_note("pairs.json", *dataset);
  return 0;
}
