#include "cli/prompt_file.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/json_text.h"
#include "text/chat_template/openai_message.h"

namespace zt::cli {
namespace {

using nlohmann::json;

std::string string_field(const json& entry, const char* key, const std::string& where, bool required) {
  if (!entry.contains(key) || entry[key].is_null()) {
    ZT_REQUIRE(!required, where + " has no \"" + key + "\"");
    return "";
  }
  ZT_REQUIRE(entry[key].is_string(), where + ": \"" + key + "\" must be a string, got " + entry[key].dump());
  return entry[key].get<std::string>();
}

// ShareGPT's speakers, and OpenAI's roles as `zerotune serve` reads them ("developer" is the
// system's), so that a conversation sent to the server reads the same from a file.
std::string role_of(const std::string& speaker, const std::string& where) {
  const std::string role = models::openai_role(speaker);
  if (role == "human" || role == "user") return "user";
  if (role == "gpt" || role == "assistant" || role == "model") return "assistant";
  if (role == "system" || role == "observation") return role;
  fail(where + ": unknown role \"" + speaker +
       "\"; accepted: system/developer, user/human, assistant/gpt/model, observation");
}

std::vector<models::ChatMessage> turns(const json& list, const char* role_key, const char* content_key,
                                       const std::string& where) {
  ZT_REQUIRE(list.is_array() && !list.empty(), where + ": the conversation must be a non-empty list");
  std::vector<models::ChatMessage> messages;
  for (const json& turn : list) {
    ZT_REQUIRE(turn.is_object(),
               where + ": every turn must be an object with \"" + role_key + "\" and \"" + content_key + "\"");
    // The content as the server reads a message's: a string or a list of text parts.
    ZT_REQUIRE(turn.contains(content_key) && !turn[content_key].is_null(), where + " has no \"" + content_key + "\"");
    messages.push_back({role_of(string_field(turn, role_key, where, true), where),
                        models::openai_content_text(turn[content_key], where + ": \"" + content_key + "\"")});
  }
  return messages;
}

std::vector<models::ChatMessage> alpaca(const json& entry, const std::string& where) {
  std::vector<models::ChatMessage> messages;
  if (std::string system = string_field(entry, "system", where, false); !system.empty())
    messages.push_back({"system", system});
  if (entry.contains("history") && !entry["history"].is_null())
    for (const json& pair : entry["history"]) {
      ZT_REQUIRE(pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string(),
                 where + ": every \"history\" entry must be a [prompt, answer] pair of strings");
      messages.push_back({"user", pair[0].get<std::string>()});
      messages.push_back({"assistant", pair[1].get<std::string>()});
    }
  std::string prompt = string_field(entry, "instruction", where, true);
  if (std::string input = string_field(entry, "input", where, false); !input.empty()) prompt += "\n" + input;
  messages.push_back({"user", prompt});
  return messages;
}

PromptInput prompt_of(const json& entry, const std::string& where) {
  if (entry.is_string()) return {false, entry.get<std::string>(), {}};
  ZT_REQUIRE(entry.is_object(), where + ": expected a string or an object, got " + entry.dump().substr(0, 80));
  PromptInput prompt{.is_chat = true};
  if (entry.contains("prompt")) return {false, string_field(entry, "prompt", where, true), {}};
  if (entry.contains("instruction"))
    prompt.messages = alpaca(entry, where);
  else if (entry.contains("messages"))
    prompt.messages = turns(entry["messages"], "role", "content", where);
  else if (entry.contains("conversations"))
    prompt.messages = turns(entry["conversations"], "from", "value", where);
  else
    fail(where + " has none of \"prompt\", \"instruction\", \"messages\", \"conversations\"");
  while (!prompt.messages.empty() && prompt.messages.back().role == "assistant") prompt.messages.pop_back();
  ZT_REQUIRE(!prompt.messages.empty(), where + ": the conversation has no turn to answer");
  return prompt;
}

}  // namespace

std::vector<PromptInput> read_prompt_file(const std::string& path) {
  std::ifstream in(path);
  ZT_REQUIRE(in.good(), "cannot read the prompts file '" + path + "'");
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  std::vector<PromptInput> prompts;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    const json array = parse_json<json>(text, path);
    for (std::size_t i = 0; i < array.size(); ++i)
      prompts.push_back(prompt_of(array[i], path + " entry " + std::to_string(i + 1)));
    return prompts;
  }
  std::istringstream lines(text);
  std::string line;
  for (std::size_t number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json entry = parse_json<json>(line, path, nullptr, number);
    prompts.push_back(prompt_of(entry, path + " line " + std::to_string(number)));
  }
  ZT_REQUIRE(!prompts.empty(), path + " holds no prompts");
  return prompts;
}

}  // namespace zt::cli
