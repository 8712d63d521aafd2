#include "train/data/preference_layout.h"

#include <utility>

#include "runtime/enum_names.h"
#include "runtime/error.h"

namespace zt::train {
namespace {

using json = nlohmann::ordered_json;
using models::ChatMessage;

// Each layout, whose convention it is and the columns that name it, for messages.
constexpr EnumName<PreferenceLayout> kLayoutNames[] = {
    {PreferenceLayout::kAlpacaRanking, "LLaMA-Factory's alpaca ranking (\"instruction\", \"chosen\", \"rejected\")"},
    {PreferenceLayout::kShareGptRanking,
     "LLaMA-Factory's ShareGPT ranking (\"conversations\" or \"messages\", \"chosen\", \"rejected\")"},
    {PreferenceLayout::kTrlExplicit, "TRL's preference layout (\"prompt\", \"chosen\", \"rejected\")"},
    {PreferenceLayout::kTrlImplicit, "TRL's implicit-prompt layout (\"chosen\" and \"rejected\" only)"},
    {PreferenceLayout::kOpenAi,
     "OpenAI's preference layout (\"input\", \"preferred_output\", \"non_preferred_output\")"}};

void require_said(bool said, const std::string& side, const SampleSource& where) {
  ZT_REQUIRE(said, where.str() + ": the answer \"" + side +
                       "\" is empty; a pair needs two answers: fill it in or drop the record");
}

// The answer a conversation was read with as its last turn, taken off it.
ChatMessage take_answer(Conversation& conversation, const std::string& side, const SampleSource& where) {
  ChatMessage answer = std::move(conversation.messages.back());
  conversation.messages.pop_back();
  require_said(!answer.content.empty() || !answer.tool_calls.empty(), side, where);
  return answer;
}

std::string string_answer(const json& record, const std::string& key, const SampleSource& where) {
  const json& value = column_value(record, key);
  ZT_REQUIRE(!value.is_null(), where.str() + " has no \"" + key + "\"; a preference record holds two answers");
  ZT_REQUIRE(value.is_string(),
             where.str() + ": \"" + key + "\" must be a string (the answer), got " + value.dump().substr(0, 200));
  require_said(!value.get<std::string>().empty(), key, where);
  return value.get<std::string>();
}

// LLaMA-Factory's alpaca ranking, rewritten into an alpaca sample answered by `chosen`.
PreferenceConversation from_alpaca_ranking(const json& record, const EntryColumns& columns, const SampleSource& where) {
  json sample = alpaca_sample(record, columns);
  ZT_REQUIRE(sample.contains("instruction"), where.str() + " has no \"" + columns.prompt + "\", the instruction");
  sample["output"] = string_answer(record, columns.chosen, where);
  const std::string rejected = string_answer(record, columns.rejected, where);
  PreferenceConversation pair;
  pair.prompt = from_alpaca(sample, where);
  pair.chosen = take_answer(pair.prompt, columns.chosen, where);
  pair.rejected = {"assistant", rejected};
  return pair;
}

bool speaks_as(const json& turn, std::initializer_list<const char*> speakers) {
  for (const char* key : {"from", "role"})
    if (turn.is_object() && turn.contains(key) && turn[key].is_string())
      for (const char* speaker : speakers)
        if (turn[key] == speaker) return true;
  return false;
}

// The prompt of a record without an entry's columns as the SFT reader's ShareGPT (or OpenAI)
// sample, its turns as they are.
json detected_sharegpt_sample(const json& record, const SampleSource& where) {
  const std::string list_key = record.contains("messages") ? "messages" : "conversations";
  const json& turns = column_value(record, list_key);
  ZT_REQUIRE(turns.is_array() && !turns.empty(),
             where.str() + ": \"" + list_key + "\" must be a non-empty list of the prompt's turns");
  json sample = json::object();
  sample[list_key] = turns;
  // A system turn first is the system prompt, as LLaMA-Factory takes it before the column.
  // Copies: a reference returned from a call given a temporary key reads as dangling to GCC 13.
  if (const json system = column_value(record, "system"); !system.is_null() && !speaks_as(turns[0], {"system"}))
    sample["system"] = system;
  if (const json tools = column_value(record, "tools"); !tools.is_null()) sample["tools"] = tools;
  return sample;
}

// LLaMA-Factory's ShareGPT ranking: the prompt's turns, then each answer appended as the last
// turn of a ShareGPT sample. With `columns` the keys and speakers are the entry's, rewritten
// into OpenAI's; without, the record is read as the SFT reader reads ShareGPT and OpenAI turns.
PreferenceConversation from_sharegpt_ranking(const json& record, const EntryColumns* columns,
                                             const SampleSource& where) {
  const std::string chosen_key = columns ? columns->chosen : "chosen";
  const std::string rejected_key = columns ? columns->rejected : "rejected";
  const json sample = columns ? sharegpt_sample(record, *columns, where) : detected_sharegpt_sample(record, where);
  const std::string sample_key = sample.contains("messages") ? "messages" : "conversations";

  PreferenceConversation pair;
  for (const std::string* side : {&chosen_key, &rejected_key}) {
    const json& answer = column_value(record, *side);
    ZT_REQUIRE(answer.is_object(), where.str() + ": \"" + *side +
                                       "\" must be one message, {\"from\": \"gpt\", \"value\": ...} or {\"role\": "
                                       "\"assistant\", \"content\": ...}, got " +
                                       answer.dump().substr(0, 200));
    json one = sample;
    one[sample_key].push_back(columns ? retagged(answer, *columns, where) : answer);
    ZT_REQUIRE(speaks_as(one[sample_key].back(), {"gpt", "assistant", "model", "function_call"}),
               where.str() + ": \"" + *side + "\" must be the assistant's message (or a function call), got " +
                   answer.dump().substr(0, 200));
    Conversation conversation = from_sharegpt(one, where);
    ChatMessage message = take_answer(conversation, *side, where);
    (side == &chosen_key ? pair.chosen : pair.rejected) = std::move(message);
    pair.prompt = std::move(conversation);
  }
  return pair;
}

// OpenAI's preference fine-tuning layout: the prompt's turns in input.messages (its tools in
// input.tools), each answer a list of one assistant message; read as LLaMA-Factory's ShareGPT
// ranking with preferred_output chosen. input.parallel_tool_calls says how the answers may call
// tools, which they show themselves.
PreferenceConversation from_openai(const json& record, const SampleSource& where) {
  const json& input = column_value(record, "input");
  ZT_REQUIRE(input.is_object() && input.contains("messages"),
             where.str() + ": \"input\" must be an object holding the prompt's \"messages\", got " +
                 input.dump().substr(0, 200));
  json ranking = json::object();
  ranking["messages"] = input["messages"];
  if (input.contains("tools")) ranking["tools"] = input["tools"];
  for (const auto& [key, side] :
       {std::pair{"preferred_output", "chosen"}, std::pair{"non_preferred_output", "rejected"}}) {
    const json& output = column_value(record, key);
    ZT_REQUIRE(
        output.is_array() && output.size() == 1,
        where.str() + ": \"" + key + "\" must be a list of one assistant message, got " + output.dump().substr(0, 200));
    ZT_REQUIRE(
        speaks_as(output[0], {"assistant"}),
        where.str() + ": \"" + key + "\" must be the assistant's message, got " + output[0].dump().substr(0, 200));
    ranking[side] = output[0];
  }
  return from_sharegpt_ranking(ranking, nullptr, where);
}

bool conversational(const json& value) { return value.is_array(); }

// The byte where a string's code point starts, at or before `at`.
std::size_t code_point_start(const std::string& text, std::size_t at) {
  while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

// TRL's extract_prompt: the prompt both answers start with, taken off them. The first place
// they differ ends it (one element back when one answer is the other's start); for text a space
// just before that place goes to the answers.
std::size_t shared_prompt_length(const json& chosen, const json& rejected) {
  if (conversational(chosen)) {
    const std::size_t n = std::min(chosen.size(), rejected.size());
    std::size_t at = 0;
    while (at < n && chosen[at] == rejected[at]) ++at;
    return at == n && n > 0 ? n - 1 : at;
  }
  const std::string& a = chosen.get_ref<const std::string&>();
  const std::string& b = rejected.get_ref<const std::string&>();
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t at = 0;
  while (at < n && a[at] == b[at]) ++at;
  if (at == n) return n > 0 ? code_point_start(a, n - 1) : 0;
  at = code_point_start(a, at);
  if (at > 0 && a[at - 1] == ' ') --at;
  return at;
}

// Elements (or bytes of text) [from, to) of `value`, `to` past the end taken as its end.
json slice(const json& value, std::size_t from, std::size_t to) {
  if (!conversational(value)) return value.get<std::string>().substr(from, to - from);
  json out = json::array();
  for (std::size_t i = from; i < to && i < value.size(); ++i) out.push_back(value[i]);
  return out;
}

// " (its other keys: system, question)", naming where a prompt may be; "" when there are none.
std::string other_keys(const json& record) {
  std::string keys;
  for (const auto& [key, value] : record.items()) {
    if (key == "chosen" || key == "rejected" || key == "prompt") continue;
    keys.append(keys.empty() ? " (its other keys: " : ", ").append(key);
  }
  return keys.empty() ? keys : keys.append(")");
}

// A TRL answer given as a list of messages: the one assistant message after the prompt.
json one_answer(const json& messages, const char* side, const SampleSource& where) {
  ZT_REQUIRE(messages.size() == 1, where.str() + ": \"" + side + "\" holds " + std::to_string(messages.size()) +
                                       " messages after the prompt; zerotune trains one answer per side: keep the "
                                       "one assistant message, or move earlier turns into \"prompt\"");
  return messages[0];
}

// TRL's preference layout: prompt, chosen and rejected as text (a user turn and its answers)
// or as lists of messages; without a prompt of the answers' kind, the prompt the answers share.
PreferenceConversation from_trl(const json& record, const SampleSource& where) {
  const json chosen = column_value(record, "chosen");
  const json rejected = column_value(record, "rejected");
  for (const auto& [value, side] : {std::pair{&chosen, "chosen"}, std::pair{&rejected, "rejected"}})
    ZT_REQUIRE(
        value->is_string() || value->is_array(),
        where.str() + ": \"" + side + "\" must be a string or a list of messages, got " + value->dump().substr(0, 200));
  ZT_REQUIRE(conversational(chosen) == conversational(rejected),
             where.str() + ": \"chosen\" and \"rejected\" must both be strings or both lists of messages");
  json prompt = column_value(record, "prompt"), chosen_part = chosen, rejected_part = rejected;
  const bool explicit_prompt =
      (prompt.is_string() || prompt.is_array()) && conversational(prompt) == conversational(chosen);
  if (!explicit_prompt) {  // TRL's maybe_extract_prompt
    const std::size_t length = shared_prompt_length(chosen, rejected);
    ZT_REQUIRE(length > 0, where.str() + ": \"chosen\" and \"rejected\" share no prompt" + other_keys(record) +
                               ": name the prompt \"prompt\", or map the record's keys with a dataset_info.json "
                               "entry's columns (prompt, system, ...) and --dataset");
    prompt = slice(chosen, 0, length);
    chosen_part = slice(chosen, length, std::string::npos);
    rejected_part = slice(rejected, length, std::string::npos);
  }
  json sample = json::object();
  json& messages = sample["messages"] = json::array();
  if (conversational(prompt)) {
    messages = prompt;
    ZT_REQUIRE(!messages.empty(), where.str() + ": \"prompt\" holds no message");
    if (const json& tools = column_value(record, "tools"); !tools.is_null()) sample["tools"] = tools;
  } else {
    messages.push_back({{"role", "user"}, {"content", prompt}});
  }
  PreferenceConversation pair;
  for (const auto& [answer, side] : {std::pair{&chosen_part, "chosen"}, std::pair{&rejected_part, "rejected"}}) {
    json one = sample;
    one["messages"].push_back(conversational(*answer) ? one_answer(*answer, side, where)
                                                      : json{{"role", "assistant"}, {"content", *answer}});
    ZT_REQUIRE(speaks_as(one["messages"].back(), {"assistant"}), where.str() + ": \"" + side +
                                                                     "\" must be the assistant's message, got " +
                                                                     one["messages"].back().dump().substr(0, 200));
    Conversation conversation = from_sharegpt(one, where);
    (std::string(side) == "chosen" ? pair.chosen : pair.rejected) = take_answer(conversation, side, where);
    pair.prompt = std::move(conversation);
  }
  return pair;
}

// The keys the SFT reader takes in an alpaca record.
EntryColumns alpaca_keys() {
  EntryColumns keys;
  keys.history = "history";
  keys.system = "system";
  keys.tools = "tools";
  keys.response = "";  // the answers are chosen and rejected
  return keys;
}

}  // namespace

std::string layout_name(PreferenceLayout layout) { return name_of(kLayoutNames, layout, ""); }

std::optional<PreferenceLayout> layout_of(const json& record) {
  if (record.is_object() && record.contains("preferred_output") && record.contains("non_preferred_output"))
    return PreferenceLayout::kOpenAi;
  if (!record.is_object() || !record.contains("chosen") || !record.contains("rejected")) return std::nullopt;
  if (record.contains("instruction")) return PreferenceLayout::kAlpacaRanking;
  // TRL's conversational answers are lists; a `messages` beside them is another column (as in
  // ultrafeedback_binarized, where it repeats the chosen conversation), which TRL ignores.
  const bool trl_answers = record["chosen"].is_array();
  if (record.contains("conversations") || (record.contains("messages") && !trl_answers))
    return PreferenceLayout::kShareGptRanking;
  if (record.contains("prompt")) return PreferenceLayout::kTrlExplicit;
  return PreferenceLayout::kTrlImplicit;
}

PreferenceConversation preference_of(const json& record, PreferenceLayout layout, const SampleSource& where) {
  switch (layout) {
    case PreferenceLayout::kAlpacaRanking:
      return from_alpaca_ranking(record, alpaca_keys(), where);
    case PreferenceLayout::kShareGptRanking:
      return from_sharegpt_ranking(record, nullptr, where);
    case PreferenceLayout::kTrlExplicit:
    case PreferenceLayout::kTrlImplicit:
      return from_trl(record, where);
    case PreferenceLayout::kOpenAi:
      return from_openai(record, where);
  }
  fail(where.str() + ": unknown preference layout");
}

PreferenceConversation preference_of(const json& record, const EntryColumns& columns, const SampleSource& where) {
  ZT_REQUIRE(record.is_object(), where.str() + " is not a JSON object");
  return columns.sharegpt ? from_sharegpt_ranking(record, &columns, where)
                          : from_alpaca_ranking(record, columns, where);
}

}  // namespace zt::train
