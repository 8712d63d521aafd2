#include "train/data/sample_truncation.h"

#include <algorithm>
#include <string>

#include "runtime/error.h"

namespace zt::train {
namespace {

void append(const TokenizedSample& from, std::size_t begin, std::size_t end, TokenizedSample& to) {
  to.ids.insert(to.ids.end(), from.ids.begin() + static_cast<std::ptrdiff_t>(begin),
                from.ids.begin() + static_cast<std::ptrdiff_t>(end));
  to.labels.insert(to.labels.end(), from.labels.begin() + static_cast<std::ptrdiff_t>(begin),
                   from.labels.begin() + static_cast<std::ptrdiff_t>(end));
}

void require_covering(const std::vector<Turn>& turns, std::size_t length) {
  std::size_t at = 0;
  for (const Turn& t : turns) {
    ZT_REQUIRE(t.prompt_begin == at && t.prompt_begin <= t.reply_begin && t.reply_begin <= t.end,
               "truncate_turns: turn [" + std::to_string(t.prompt_begin) + ", " + std::to_string(t.reply_begin) + ", " +
                   std::to_string(t.end) + ") does not follow the previous one, which ended at " + std::to_string(at));
    at = t.end;
  }
  ZT_REQUIRE(at == length, "truncate_turns: the turns cover " + std::to_string(at) + " of the sample's " +
                               std::to_string(length) + " tokens");
}

}  // namespace

TurnLengths turn_lengths_within(std::size_t prompt, std::size_t reply, std::size_t budget) {
  std::size_t reply_limit = 0;
  if (reply * 2 < budget)
    reply_limit = budget;  // the prompt gives way
  else if (prompt * 2 < budget)
    reply_limit = budget - prompt;  // the reply gives way
  else  // both give way, in proportion (LLaMA-Factory's int() of the same product, in exact arithmetic)
    reply_limit = budget * reply / (prompt + reply);
  TurnLengths kept;
  kept.reply = std::min(reply_limit, reply);
  kept.prompt = std::min(budget - kept.reply, prompt);
  return kept;
}

Truncated truncate_turns(const TokenizedSample& sample, const std::vector<Turn>& turns, std::size_t max_length) {
  require_covering(turns, sample.ids.size());
  Truncated out;
  if (sample.ids.size() <= max_length) {
    out.sample = sample;
    return out;
  }
  std::size_t total = 0;
  for (const Turn& t : turns) {
    const std::size_t prompt = t.reply_begin - t.prompt_begin, reply = t.end - t.reply_begin;
    if (total >= max_length) {
      out.cut.prompt += prompt;
      out.cut.reply += reply;
      ++out.cut.dropped_turns;
      continue;
    }
    const TurnLengths kept = turn_lengths_within(prompt, reply, max_length - total);
    append(sample, t.prompt_begin, t.prompt_begin + kept.prompt, out.sample);
    append(sample, t.reply_begin, t.reply_begin + kept.reply, out.sample);
    out.cut.prompt += prompt - kept.prompt;
    out.cut.reply += reply - kept.reply;
    total += kept.prompt + kept.reply;
  }
  return out;
}

TokenizedSample truncate_tail(const TokenizedSample& sample, std::size_t max_length) {
  TokenizedSample out;
  append(sample, 0, std::min(max_length, sample.ids.size()), out);
  return out;
}

}  // namespace zt::train
