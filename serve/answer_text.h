// The text of an answer as its tokens arrive: decoded piece by piece (text/stream_decoder.h,
// special tokens skipped) and cut before the first of the request's stop strings. Text that
// could still turn out to begin a stop string is held back until it cannot, so what has been
// sent never contains one.
#pragma once

#include <string>
#include <vector>

#include "text/stream_decoder.h"

namespace zt::serve {

class AnswerText {
 public:
  AnswerText(const models::Tokenizer& tokenizer, std::vector<std::string> stops);

  // The text that can be sent now (possibly empty); nothing once a stop string was reached.
  std::string put(std::int64_t token);
  // What is still held back, at the end of the answer.
  std::string finish();
  // Whether a stop string ended the answer.
  bool stopped() const { return stopped_; }

 private:
  std::size_t held_back_length() const;
  // Cuts `text` before its first stop string, if any; true when it had one.
  bool cut_at_stop(std::string& text);

  models::StreamDecoder decoder_;
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace zt::serve
