// Training data as users have it: alpaca JSON (`instruction`, `input`, `output`, optional
// `system` and `history`), ShareGPT JSON (`conversations` of `{from, value}`, with
// LLaMA-Factory's `function_call` and `observation` turns and a `tools` column) or OpenAI's
// `messages` of `{role, content}` (with `tool_calls`, `tool` results and `tools`), or plain
// text (`{"text": ...}`, a pre-training document), as one JSON array or JSON Lines, or a .txt
// file of texts, one per line (LLaMA-Factory's wiki_demo.txt). A chat
// sample becomes a Conversation, which the chat template turns into tokens later; a text
// sample stays text, tokenized without a template. Samples with images, videos or audio are
// refused: zerotune trains on text.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/chat_template/chat_template.h"

namespace zt::train {

struct EntryColumns;  // entry_columns.h

struct Conversation {
  // An optional system message first, then turns that alternate between the user (or the
  // results of the tools just called) and the assistant (an answer, or tool calls).
  std::vector<models::ChatMessage> messages;
  models::ChatTools tools = {};  // the tools offered, in OpenAI's layout
  std::string source = {};       // "file: sample 3 (line 4)", for messages about the sample
  // The assistant replies (counted from 0) left untrained: LLaMA-Factory v1's loss_weight 0,
  // OpenAI's weight 0.
  std::vector<std::size_t> untrained_replies = {};
};

enum class DataFormat { kAlpaca, kShareGpt, kText };

struct Dataset {
  DataFormat format = DataFormat::kAlpaca;
  std::vector<Conversation> samples;  // alpaca and ShareGPT
  std::vector<std::string> texts;     // plain text
  // Keys left unread (see load_dataset) and how many samples gave them a value.
  std::vector<std::pair<std::string, std::size_t>> unread = {};
  std::size_t size() const { return format == DataFormat::kText ? texts.size() : samples.size(); }
};

// "alpaca (\"instruction\")" and the like: a format as messages name it.
std::string format_name(DataFormat format);

// Reads `path`. The format is detected from the first sample's keys and every sample must
// follow it; a malformed sample, or one of another format, is an error naming the file, the
// sample's index (and line for JSON Lines) and what is wrong.
// `unread_keys` are not read, as LLaMA-Factory reads no column its dataset_info.json entry
// leaves out (an entry without "history" trains no history); Dataset::unread counts them.
// With `columns` (an entry that renames keys or tags) each record is read through them, in
// the entry's formatting, as LLaMA-Factory's converters read it.
Dataset load_dataset(const std::string& path, const std::vector<std::string>& unread_keys = {},
                     const EntryColumns* columns = nullptr);

// The same from the file's text; `path` names it in messages.
Dataset parse_dataset(std::string_view text, const std::string& path, const std::vector<std::string>& unread_keys = {},
                      const EntryColumns* columns = nullptr);

}  // namespace zt::train
