// A thinking model's streamed answer shown with its reasoning apart. Qwen3 (and other
// reasoning models) write "<think>reasoning</think>answer"; the tags are plain text to the
// tokenizer, and as the answer streams a tag may arrive split over pieces. ReasoningSplitter
// tells reasoning from answer as the text arrives; ReasoningPrinter writes the reasoning after
// a "reasoning: " prefix (dimmed when `styled`, for a terminal) and the answer after "answer: ".
// An answer without a think block is written as it is, with no prefix. Where the prompt
// already opened the think block (Qwen3's Thinking-2507 models, QwQ: their generation prompt
// ends "<think>\n"), the answer starts inside it: its text before "</think>" is reasoning.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace zt::models {

struct StreamPart {
  bool reasoning = false;
  std::string text;
};

// Whether `prompt` ends inside a think block: a "<think>" after the last "</think>".
bool prompt_opens_think(std::string_view prompt);

class ReasoningSplitter {
 public:
  // `in_reasoning`: the text starts inside a think block the prompt opened.
  explicit ReasoningSplitter(bool in_reasoning = false) : in_reasoning_(in_reasoning) {}
  // The parts of `piece` that are certain; text that may be the start of a tag is held back.
  std::vector<StreamPart> put(std::string_view piece);
  // What is still held back (an unfinished tag is text after all).
  std::vector<StreamPart> finish();

 private:
  bool in_reasoning_ = false;
  std::string pending_;
};

class ReasoningPrinter {
 public:
  ReasoningPrinter(std::ostream& out, bool styled, bool in_reasoning = false)
      : out_(out), styled_(styled), splitter_(in_reasoning) {}

  void put(std::string_view piece);
  // Writes what was held back and ends the styling.
  void finish();

 private:
  enum class Section { kNone, kReasoning, kAnswer };
  void write(const StreamPart& part);
  void show(Section section);

  std::ostream& out_;
  bool styled_;
  ReasoningSplitter splitter_;
  Section current_ = Section::kNone;  // where the text is
  Section shown_ = Section::kNone;    // whose prefix was written last
  bool started_ = false;              // text other than white space came in the current section
  bool thought_ = false;              // a think block began, even an empty one
  bool at_line_start_ = true;
  std::string leading_space_;  // of an answer that may yet turn out to precede a think block
};

}  // namespace zt::models
