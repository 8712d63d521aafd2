#include "train/data/preference_columns.h"

#include "runtime/error.h"

namespace zt::train {
namespace {

using nlohmann::json;

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

void read_columns(const json& columns, RankingColumns& out, const std::string& where) {
  ZT_REQUIRE(columns.is_object(), where + ": \"columns\" must be an object");
  for (const char* media : {"images", "videos", "audios"})
    ZT_REQUIRE(!columns.contains(media) || columns[media].is_null(),
               where + " maps the column " + media + "; zerotune trains on text only: drop the column");
  ZT_REQUIRE(!columns.contains("kto_tag") || columns["kto_tag"].is_null(),
             where +
                 " maps kto_tag (KTO's unpaired data); --stage dpo trains on pairs of a chosen and a rejected "
                 "answer");
  // LLaMA-Factory sets every column from "columns", unlisted ones to None; chosen and rejected
  // have no default there, so an entry naming neither is one it could not read.
  read_name(columns, "columns", "prompt", "", out.prompt, where);
  read_name(columns, "columns", "query", "", out.query, where);
  read_name(columns, "columns", "history", "", out.history, where);
  read_name(columns, "columns", "system", "", out.system, where);
  read_name(columns, "columns", "tools", "", out.tools, where);
  read_name(columns, "columns", "messages", "", out.messages, where);
  read_name(columns, "columns", "chosen", "chosen", out.chosen, where);
  read_name(columns, "columns", "rejected", "rejected", out.rejected, where);
  ZT_REQUIRE(!out.chosen.empty() && !out.rejected.empty(),
             where + ": columns chosen and rejected must name the keys of the two answers");
}

void read_tags(const json& tags, RankingColumns& out, const std::string& where) {
  ZT_REQUIRE(tags.is_object(), where + ": \"tags\" must be an object");
  const RankingColumns defaults;
  read_name(tags, "tags", "role_tag", defaults.role_tag, out.role_tag, where);
  read_name(tags, "tags", "content_tag", defaults.content_tag, out.content_tag, where);
  read_name(tags, "tags", "user_tag", defaults.user_tag, out.user_tag, where);
  read_name(tags, "tags", "assistant_tag", defaults.assistant_tag, out.assistant_tag, where);
  read_name(tags, "tags", "observation_tag", defaults.observation_tag, out.observation_tag, where);
  read_name(tags, "tags", "function_tag", defaults.function_tag, out.function_tag, where);
  read_name(tags, "tags", "system_tag", defaults.system_tag, out.system_tag, where);
  ZT_REQUIRE(!out.role_tag.empty() && !out.content_tag.empty(),
             where + ": tags role_tag and content_tag must name the keys of a message's speaker and text");
}

}  // namespace

std::optional<RankingColumns> ranking_columns(const json& entry, const std::string& where) {
  if (!entry.contains("columns") && !entry.contains("tags")) return std::nullopt;
  RankingColumns out;
  out.sharegpt = entry.value("formatting", json("alpaca")) == "sharegpt";
  if (entry.contains("columns")) read_columns(entry["columns"], out, where);
  if (out.sharegpt && entry.contains("tags")) read_tags(entry["tags"], out, where);
  ZT_REQUIRE(out.sharegpt ? !out.messages.empty() : !out.prompt.empty(),
             where + (out.sharegpt ? ": sharegpt data needs columns messages, the key of the prompt's turns"
                                   : ": alpaca data needs columns prompt, the key of the instruction"));
  return out;
}

}  // namespace zt::train
