#include "serve/answer_text.h"

#include <algorithm>
#include <utility>

namespace zt::serve {

AnswerText::AnswerText(const models::Tokenizer& tokenizer, std::vector<std::string> stops, bool include_stop,
                       bool skip_special_tokens)
    : decoder_(tokenizer, skip_special_tokens), stops_(std::move(stops)), include_stop_(include_stop) {}

// The longest end of held_ that begins some stop string.
std::size_t AnswerText::held_back_length() const {
  std::size_t longest = 0;
  for (const std::string& stop : stops_)
    for (std::size_t length = std::min(stop.size() - 1, held_.size()); length > longest; --length)
      if (held_.compare(held_.size() - length, length, stop, 0, length) == 0) {
        longest = length;
        break;
      }
  return longest;
}

bool AnswerText::cut_at_stop(std::string& text) {
  std::size_t first_stop = std::string::npos, stop_length = 0;
  for (const std::string& stop : stops_)
    if (const std::size_t at = text.find(stop); at < first_stop) first_stop = at, stop_length = stop.size();
  if (first_stop == std::string::npos) return false;
  text.resize(first_stop + (include_stop_ ? stop_length : 0));
  stopped_ = true;
  return true;
}

std::string AnswerText::put(std::int64_t token) {
  if (stopped_) return "";
  held_ += decoder_.put(token);
  if (cut_at_stop(held_)) return std::exchange(held_, "");
  const std::size_t ready = held_.size() - held_back_length();
  std::string text = held_.substr(0, ready);
  held_.erase(0, ready);
  return text;
}

std::string AnswerText::finish() {
  if (stopped_) return "";
  std::string text = std::exchange(held_, "") + decoder_.finish();
  cut_at_stop(text);
  return text;
}

}  // namespace zt::serve
