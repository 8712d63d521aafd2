#include "train/data/sample_truncation.h"

#include <algorithm>

#include "runtime/error.h"

namespace zt::train {
namespace {

// The prompt is owed this share of max_length (1 / kPromptShareDivisor) before the reply is cut.
constexpr std::size_t kPromptShareDivisor = 4;

void append(const TokenizedSample& from, std::size_t begin, std::size_t end, TokenizedSample& to) {
  to.ids.insert(to.ids.end(), from.ids.begin() + static_cast<std::ptrdiff_t>(begin),
                from.ids.begin() + static_cast<std::ptrdiff_t>(end));
  to.labels.insert(to.labels.end(), from.labels.begin() + static_cast<std::ptrdiff_t>(begin),
                   from.labels.begin() + static_cast<std::ptrdiff_t>(end));
}

}  // namespace

TokenizedSample truncate_keeping_reply(const TokenizedSample& sample, const ReplySpan& reply, std::size_t max_length) {
  const std::size_t length = sample.ids.size();
  ZT_REQUIRE(reply.begin <= length && reply.header <= reply.begin,
             "truncate_keeping_reply: reply at " + std::to_string(reply.begin) + " with a header of " +
                 std::to_string(reply.header) + " tokens does not fit a sample of " + std::to_string(length));
  if (length <= max_length) return sample;
  const std::size_t prompt = reply.begin;
  const std::size_t prompt_owed = std::min(prompt, max_length / kPromptShareDivisor);
  const std::size_t reply_kept = std::min(length - prompt, max_length - prompt_owed);
  const std::size_t prompt_kept = std::min(prompt, max_length - reply_kept);
  const std::size_t header_kept = std::min(reply.header, prompt_kept / 2);
  TokenizedSample out;
  append(sample, 0, prompt_kept - header_kept, out);
  append(sample, prompt - header_kept, prompt + reply_kept, out);
  return out;
}

TokenizedSample truncate_tail(const TokenizedSample& sample, std::size_t max_length) {
  TokenizedSample out;
  append(sample, 0, std::min(max_length, sample.ids.size()), out);
  return out;
}

}  // namespace zt::train
