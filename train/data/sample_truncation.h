// How a sample longer than --max_length is cut (--overlong_samples truncate).
//
// A conversation is there to teach its last reply, so the cut falls on the prompt (every
// token before the last reply) first:
//   1. the prompt is owed min(prompt, max_length / 4) tokens: a reply without the question
//      it answers teaches little;
//   2. the reply keeps min(reply, max_length - what the prompt is owed); only a reply longer
//      than that loses its tail;
//   3. the prompt keeps what is left: its first tokens (the template's prefix, the system
//      prompt, the start of the conversation) and its last `reply_header` tokens (what opens
//      the reply, `<|im_start|>assistant\n` for Qwen), the header taking at most half of
//      the kept prompt; the middle of the prompt goes.
// The cut depends on the lengths alone, so a sample is always cut the same way. A plain text
// has no reply: its tail goes.
#pragma once

#include <cstddef>

#include "train/data/batching.h"

namespace zt::train {

// Where the last reply begins in a conversation, and how many of the prompt's last tokens
// open it.
struct ReplySpan {
  std::size_t begin = 0;
  std::size_t header = 0;
};

TokenizedSample truncate_keeping_reply(const TokenizedSample& sample, const ReplySpan& reply, std::size_t max_length);

TokenizedSample truncate_tail(const TokenizedSample& sample, std::size_t max_length);

}  // namespace zt::train
