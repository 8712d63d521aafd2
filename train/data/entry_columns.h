// How LLaMA-Factory's dataset_info.json describes a dataset: its "formatting" and the "columns"
// and "tags" that say which key of a record holds what, as its data/parser.py reads them. The
// SFT reader (dataset.h) and the preference reader (preference_layout.h) read a file's records
// through them; train/args/dataset_selection.cpp takes them from the entry.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "train/data/chat_sample.h"

namespace zt::train {

// A dataset's description in LLaMA-Factory's dataset_info.json (its DatasetAttr): which key of
// a record holds what. As LLaMA-Factory reads "columns", a column the entry does not list is
// absent; an empty string here is an absent column.
struct EntryColumns {
  bool sharegpt = false;  // "formatting": "sharegpt" (else alpaca)
  std::string prompt = "instruction", query = "input", response = "output", history = "", system = "", tools = "";
  std::string messages = "conversations", chosen = "chosen", rejected = "rejected";
  std::string role_tag = "from", content_tag = "value", user_tag = "human", assistant_tag = "gpt",
              observation_tag = "observation", function_tag = "function_call", system_tag = "system";
};

// A ranking entry's "formatting", "columns" and "tags" as LLaMA-Factory's parser reads them
// (chosen and rejected keep their names where the columns do not rename them); nullopt when the
// entry has neither columns nor tags, and the records' layout is detected as for a file named
// directly. `where` names the entry in messages. Columns for images, videos or audio and KTO's
// kto_tag are refused: zerotune trains on pairs of text answers. So are two columns reading one
// key, and tags giving two roles one value: the record would be read twice, or a turn's role
// would be a guess.
std::optional<EntryColumns> ranking_columns(const nlohmann::json& entry, const std::string& where);

// The same for an entry of instructions and answers (response is its answer; chosen and
// rejected are not read).
std::optional<EntryColumns> supervised_columns(const nlohmann::json& entry, const std::string& where);

// The record's value under `key`; null when the column is absent or the record lacks it.
const nlohmann::ordered_json& column_value(const nlohmann::ordered_json& record, const std::string& key);

// A turn of an entry with its own tags in the SFT reader's OpenAI layout: "role" (user,
// assistant, tool, function_call or system) and "content", its other keys kept.
nlohmann::ordered_json retagged(const nlohmann::ordered_json& turn, const EntryColumns& columns,
                                const SampleSource& where);

// An alpaca record's columns under the SFT reader's keys (instruction, input, output, system,
// history, tools); absent columns are left out.
nlohmann::ordered_json alpaca_sample(const nlohmann::ordered_json& record, const EntryColumns& columns);

// A ShareGPT record's turns, retagged, under "messages", with its system and tools columns; a
// system turn first is the system prompt, as LLaMA-Factory takes it before the column.
nlohmann::ordered_json sharegpt_sample(const nlohmann::ordered_json& record, const EntryColumns& columns,
                                       const SampleSource& where);

// An SFT record read through the entry's columns: the sample the SFT reader reads, its prompt
// and response (or messages) required under the entry's names.
nlohmann::ordered_json renamed_sample(const nlohmann::ordered_json& record, const EntryColumns& columns,
                                      const SampleSource& where);

}  // namespace zt::train
