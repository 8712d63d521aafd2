// The text of an answer as its tokens arrive: decoded piece by piece (text/stream_decoder.h,
// special tokens skipped unless asked otherwise) and cut before the first of the request's stop strings (after it
// with vLLM's include_stop_str_in_output). Text that could still turn out to begin a stop
// string is held back until it cannot, so what has been sent never contains one before it ends.
#pragma once

#include <string>
#include <vector>

#include "text/stream_decoder.h"

namespace zt::serve {

class AnswerText {
 public:
  // `include_stop`: the stop string that ends the answer stays at its end. `skip_special_tokens`
  // false: special tokens' text is kept (vLLM's skip_special_tokens).
  AnswerText(const models::Tokenizer& tokenizer, std::vector<std::string> stops, bool include_stop = false,
             bool skip_special_tokens = true);

  // The text that can be sent now (possibly empty); nothing once a stop string was reached.
  std::string put(std::int64_t token);
  // What is still held back, at the end of the answer.
  std::string finish();
  // Whether a stop string ended the answer.
  bool stopped() const { return stopped_; }

 private:
  std::size_t held_back_length() const;
  // Cuts `text` before (or after, include_stop_) its first stop string, if any; true when it had one.
  bool cut_at_stop(std::string& text);

  models::StreamDecoder decoder_;
  std::vector<std::string> stops_;
  bool include_stop_ = false;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace zt::serve
