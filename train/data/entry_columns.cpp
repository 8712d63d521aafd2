#include "train/data/entry_columns.h"

#include <utility>
#include <vector>

#include "runtime/error.h"

namespace zt::train {
namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// `key` of the entry's `part` ("columns" or "tags") into `field`: a string, or null for an
// absent column; unlisted, it becomes `unlisted`.
void read_name(const json& part, const char* part_name, const char* key, const std::string& unlisted,
               std::string& field, const std::string& where) {
  if (!part.contains(key)) {
    field = unlisted;
    return;
  }
  const json& value = part[key];
  ZT_REQUIRE(value.is_string() || value.is_null(),
             where + ": " + part_name + " " + key + " must name a key of the records (a string), got " + value.dump());
  field = value.is_null() ? "" : value.get<std::string>();
}

// Each non-empty name once: two columns (or two roles) named alike would read one key twice,
// or leave a turn's role a guess.
void require_distinct(const std::vector<std::pair<const char*, const std::string*>>& names, const char* part,
                      const std::string& where) {
  for (std::size_t i = 0; i < names.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      ZT_REQUIRE(names[i].second->empty() || *names[i].second != *names[j].second,
                 where + ": " + part + " " + names[j].first + " and " + names[i].first + " both name \"" +
                     *names[i].second + "\"; each must name its own: fix the entry's \"" + part + "\"");
}

void read_columns(const json& columns, EntryColumns& out, bool ranking, const std::string& where) {
  ZT_REQUIRE(columns.is_object(), where + ": \"columns\" must be an object");
  for (const char* media : {"images", "videos", "audios"})
    ZT_REQUIRE(!columns.contains(media) || columns[media].is_null(),
               where + " maps the column " + media + "; zerotune trains on text only: drop the column");
  ZT_REQUIRE(!columns.contains("kto_tag") || columns["kto_tag"].is_null(),
             where +
                 " maps kto_tag (KTO's unpaired data); --stage dpo trains on pairs of a chosen and a rejected "
                 "answer");
  // LLaMA-Factory sets every column from "columns", unlisted ones to None; chosen and rejected
  // have no default there, so a ranking entry naming neither is one it could not read.
  read_name(columns, "columns", "prompt", "", out.prompt, where);
  read_name(columns, "columns", "query", "", out.query, where);
  read_name(columns, "columns", "history", "", out.history, where);
  read_name(columns, "columns", "system", "", out.system, where);
  read_name(columns, "columns", "tools", "", out.tools, where);
  read_name(columns, "columns", "messages", "", out.messages, where);
  read_name(columns, "columns", "response", "", out.response, where);
  if (ranking) {
    read_name(columns, "columns", "chosen", "chosen", out.chosen, where);
    read_name(columns, "columns", "rejected", "rejected", out.rejected, where);
    ZT_REQUIRE(!out.chosen.empty() && !out.rejected.empty(),
               where + ": columns chosen and rejected must name the keys of the two answers");
  }
}

void read_tags(const json& tags, EntryColumns& out, const std::string& where) {
  ZT_REQUIRE(tags.is_object(), where + ": \"tags\" must be an object");
  const EntryColumns defaults;
  read_name(tags, "tags", "role_tag", defaults.role_tag, out.role_tag, where);
  read_name(tags, "tags", "content_tag", defaults.content_tag, out.content_tag, where);
  read_name(tags, "tags", "user_tag", defaults.user_tag, out.user_tag, where);
  read_name(tags, "tags", "assistant_tag", defaults.assistant_tag, out.assistant_tag, where);
  read_name(tags, "tags", "observation_tag", defaults.observation_tag, out.observation_tag, where);
  read_name(tags, "tags", "function_tag", defaults.function_tag, out.function_tag, where);
  read_name(tags, "tags", "system_tag", defaults.system_tag, out.system_tag, where);
  ZT_REQUIRE(!out.role_tag.empty() && !out.content_tag.empty(),
             where + ": tags role_tag and content_tag must name the keys of a message's speaker and text");
  require_distinct({{"role_tag", &out.role_tag}, {"content_tag", &out.content_tag}}, "tags", where);
  require_distinct({{"user_tag", &out.user_tag},
                    {"assistant_tag", &out.assistant_tag},
                    {"observation_tag", &out.observation_tag},
                    {"function_tag", &out.function_tag},
                    {"system_tag", &out.system_tag}},
                   "tags", where);
}

std::optional<EntryColumns> entry_columns(const json& entry, bool ranking, const std::string& where) {
  if (!entry.contains("columns") && !entry.contains("tags")) return std::nullopt;
  EntryColumns out;
  out.sharegpt = entry.value("formatting", json("alpaca")) == "sharegpt";
  if (ranking)
    out.response = "";  // its answers are chosen and rejected
  else
    out.chosen = out.rejected = "";
  if (entry.contains("columns")) read_columns(entry["columns"], out, ranking, where);
  if (out.sharegpt && entry.contains("tags")) read_tags(entry["tags"], out, where);
  if (out.sharegpt)
    out.prompt = out.query = out.response = out.history = "";  // LLaMA-Factory's sharegpt reads none of them
  else
    out.messages = "";
  require_distinct({{"prompt", &out.prompt},
                    {"query", &out.query},
                    {"response", &out.response},
                    {"history", &out.history},
                    {"system", &out.system},
                    {"tools", &out.tools},
                    {"messages", &out.messages},
                    {"chosen", &out.chosen},
                    {"rejected", &out.rejected}},
                   "columns", where);
  ZT_REQUIRE(out.sharegpt ? !out.messages.empty() : !out.prompt.empty(),
             where + (out.sharegpt ? ": sharegpt data needs columns messages, the key of the prompt's turns"
                                   : ": alpaca data needs columns prompt, the key of the instruction"));
  return out;
}

}  // namespace

std::optional<EntryColumns> ranking_columns(const json& entry, const std::string& where) {
  return entry_columns(entry, true, where);
}

std::optional<EntryColumns> supervised_columns(const json& entry, const std::string& where) {
  return entry_columns(entry, false, where);
}

const ordered_json& column_value(const ordered_json& record, const std::string& key) {
  static const ordered_json absent;
  return key.empty() || !record.is_object() || !record.contains(key) ? absent : record[key];
}

ordered_json retagged(const ordered_json& turn, const EntryColumns& columns, const SampleSource& where) {
  ZT_REQUIRE(turn.is_object(), where.str() + ": every message must be an object, got " + turn.dump().substr(0, 200));
  const ordered_json& speaker = column_value(turn, columns.role_tag);
  const std::pair<const std::string*, const char*> roles[] = {{&columns.user_tag, "user"},
                                                              {&columns.assistant_tag, "assistant"},
                                                              {&columns.observation_tag, "tool"},
                                                              {&columns.function_tag, "function_call"},
                                                              {&columns.system_tag, "system"}};
  ordered_json out = turn;
  out.erase(columns.role_tag);
  out.erase(columns.content_tag);
  for (const auto& [tag, role] : roles)
    if (speaker.is_string() && !tag->empty() && speaker == *tag) out["role"] = role;
  ZT_REQUIRE(out.contains("role"), where.str() + ": a message's \"" + columns.role_tag + "\" is " + speaker.dump() +
                                       ", none of the entry's tags (user " + columns.user_tag + ", assistant " +
                                       columns.assistant_tag + ", observation " + columns.observation_tag +
                                       ", function " + columns.function_tag + ", system " + columns.system_tag +
                                       "): fix the record or the entry's \"tags\"");
  out["content"] = column_value(turn, columns.content_tag);
  return out;
}

ordered_json alpaca_sample(const ordered_json& record, const EntryColumns& columns) {
  ordered_json sample = ordered_json::object();
  const std::pair<const std::string*, const char*> keys[] = {
      {&columns.prompt, "instruction"}, {&columns.query, "input"},     {&columns.response, "output"},
      {&columns.system, "system"},      {&columns.history, "history"}, {&columns.tools, "tools"}};
  for (const auto& [from, to] : keys)
    if (const ordered_json& value = column_value(record, *from); !value.is_null()) sample[to] = value;
  return sample;
}

ordered_json sharegpt_sample(const ordered_json& record, const EntryColumns& columns, const SampleSource& where) {
  const ordered_json& turns = column_value(record, columns.messages);
  ZT_REQUIRE(turns.is_array() && !turns.empty(),
             where.str() + ": \"" + columns.messages + "\" must be a non-empty list of the prompt's turns");
  ordered_json sample = ordered_json::object();
  ordered_json& messages = sample["messages"] = ordered_json::array();
  for (const ordered_json& turn : turns) messages.push_back(retagged(turn, columns, where));
  if (const ordered_json& system = column_value(record, columns.system);
      !system.is_null() && messages[0]["role"] != "system")
    sample["system"] = system;
  if (const ordered_json& tools = column_value(record, columns.tools); !tools.is_null()) sample["tools"] = tools;
  return sample;
}

ordered_json renamed_sample(const ordered_json& record, const EntryColumns& columns, const SampleSource& where) {
  ZT_REQUIRE(record.is_object(), where.str() + " is not a JSON object");
  if (columns.sharegpt) return sharegpt_sample(record, columns, where);
  for (const auto& [key, what] : {std::pair{&columns.prompt, "prompt"}, std::pair{&columns.response, "response"}})
    ZT_REQUIRE(!column_value(record, *key).is_null(),
               where.str() + " has no \"" + *key + "\", the entry's " + what + " column");
  return alpaca_sample(record, columns);
}

}  // namespace zt::train
