#include "text/reasoning_stream.h"

#include <algorithm>

namespace zt::models {
namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";
constexpr std::string_view kDim = "\x1b[2m", kReset = "\x1b[0m";

// How many bytes at the end of `text` could begin `tag`.
std::size_t partial_tag_length(std::string_view text, std::string_view tag) {
  for (std::size_t length = std::min(text.size(), tag.size() - 1); length > 0; --length)
    if (tag.substr(0, length) == text.substr(text.size() - length)) return length;
  return 0;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

bool prompt_opens_think(std::string_view prompt) {
  const std::size_t open = prompt.rfind(kOpen);
  if (open == std::string_view::npos) return false;
  const std::size_t close = prompt.rfind(kClose);
  return close == std::string_view::npos || close < open;
}

std::vector<StreamPart> ReasoningSplitter::put(std::string_view piece) {
  pending_ += piece;
  std::vector<StreamPart> parts;
  auto emit = [&](std::size_t length) {
    if (length > 0) parts.push_back({in_reasoning_, pending_.substr(0, length)});
    pending_.erase(0, length);
  };
  while (true) {
    const std::string_view tag = in_reasoning_ ? kClose : kOpen;
    const std::size_t found = pending_.find(tag);
    if (found == std::string::npos) break;
    emit(found);
    pending_.erase(0, tag.size());
    in_reasoning_ = !in_reasoning_;
  }
  emit(pending_.size() - partial_tag_length(pending_, in_reasoning_ ? kClose : kOpen));
  return parts;
}

std::vector<StreamPart> ReasoningSplitter::finish() {
  std::vector<StreamPart> parts;
  if (!pending_.empty()) parts.push_back({in_reasoning_, pending_});
  pending_.clear();
  return parts;
}

void ReasoningPrinter::put(std::string_view piece) {
  for (const StreamPart& part : splitter_.put(piece)) write(part);
}

void ReasoningPrinter::finish() {
  for (const StreamPart& part : splitter_.finish()) write(part);
  if (!thought_) out_ << leading_space_;  // an answer of white space alone
  if (styled_ && shown_ == Section::kReasoning) out_ << kReset;
  out_.flush();
}

// A section's prefix, on a line of its own; the reasoning dimmed when styled. An answer after
// no reasoning shown needs none.
void ReasoningPrinter::show(Section section) {
  if (section == Section::kAnswer && shown_ == Section::kNone) {
    shown_ = section;
    return;
  }
  if (styled_ && shown_ == Section::kReasoning) out_ << kReset;
  if (!at_line_start_) out_ << "\n";
  if (section == Section::kReasoning && styled_) out_ << kDim;
  out_ << (section == Section::kReasoning ? "reasoning: " : "answer: ");
  shown_ = section;
}

void ReasoningPrinter::write(const StreamPart& part) {
  const Section section = part.reasoning ? Section::kReasoning : Section::kAnswer;
  if (section != current_) current_ = section, started_ = false;
  thought_ |= part.reasoning;
  std::string_view text = part.text;
  if (!started_) {
    // An answer with no reasoning before it is written as it is, its leading white space held
    // until it is known not to precede a think block. Elsewhere the white space around the tags
    // (Qwen3 writes "<think>\n" and "</think>\n\n") would only push the text away from its
    // prefix, and an empty think block shows nothing.
    const auto first = static_cast<std::size_t>(std::find_if_not(text.begin(), text.end(), is_space) - text.begin());
    if (first == text.size()) {
      if (!thought_) leading_space_ += text;
      return;
    }
    started_ = true;
    if (thought_)
      text.remove_prefix(first);
    else
      out_ << leading_space_;
    leading_space_.clear();
    show(section);
  }
  out_ << text << std::flush;
  at_line_start_ = text.back() == '\n';
}

}  // namespace zt::models
