// How LLaMA-Factory's dataset_info.json describes a ranking (preference) dataset: its
// "formatting" and the "columns" and "tags" that say which key of a record holds what, as
// its data/parser.py reads them. The preference reader (preference_layout.h) reads a file's
// records through them; train/args/dataset_selection.cpp takes them from the entry.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace zt::train {

// A ranking dataset's description in LLaMA-Factory's dataset_info.json (its DatasetAttr):
// which key of a record holds what. As LLaMA-Factory reads "columns", a column the entry does
// not list is absent; an empty string here is an absent column.
struct RankingColumns {
  bool sharegpt = false;  // "formatting": "sharegpt" (else alpaca)
  std::string prompt = "instruction", query = "input", history = "", system = "", tools = "";
  std::string messages = "conversations", chosen = "chosen", rejected = "rejected";
  std::string role_tag = "from", content_tag = "value", user_tag = "human", assistant_tag = "gpt",
              observation_tag = "observation", function_tag = "function_call", system_tag = "system";
};

// The entry's "formatting", "columns" and "tags" as LLaMA-Factory's parser reads them (chosen
// and rejected keep their names where the columns do not rename them); nullopt when the entry
// has neither columns nor tags, and the records' layout is detected as for a file named
// directly. `where` names the entry in messages. Columns for images, videos or audio and KTO's
// kto_tag are refused: zerotune trains on pairs of text answers.
std::optional<RankingColumns> ranking_columns(const nlohmann::json& entry, const std::string& where);

}  // namespace zt::train
