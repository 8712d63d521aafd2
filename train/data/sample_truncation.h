// How a sample longer than --max_length is cut (--overlong_samples truncate): as
// LLaMA-Factory cuts one to its cutoff_len (its supervised processor and infer_seqlen), so a
// data set and a length give the same training tokens in both tools.
//
// A conversation is a list of turns, each a prompt (LLaMA-Factory's source: everything since
// the previous reply, the template's prefix and system prompt in the first) and a reply (its
// target: the tokens trained). The turns are taken in order, each within what the earlier ones
// left of max_length:
//   - a reply shorter than half of that stays whole and the prompt keeps what is left;
//   - else a prompt shorter than half stays whole and the reply keeps what is left;
//   - else both are cut, in proportion to their lengths;
// each keeping its first tokens. Once max_length is used up, the later turns are dropped.
// So the system prompt and the start of the question survive, and a long question can push
// the end of the question, the reply header or a later turn out. A plain text has no turns:
// its tail goes.
#pragma once

#include <cstddef>
#include <vector>

#include "train/data/batching.h"

namespace zt::train {

// One turn of a conversation's ids: the prompt [prompt_begin, reply_begin) and the reply
// [reply_begin, end).
struct Turn {
  std::size_t prompt_begin = 0;
  std::size_t reply_begin = 0;
  std::size_t end = 0;
};

// LLaMA-Factory's infer_seqlen: the lengths a prompt and a reply keep within `budget` tokens.
struct TurnLengths {
  std::size_t prompt = 0;
  std::size_t reply = 0;
};
TurnLengths turn_lengths_within(std::size_t prompt, std::size_t reply, std::size_t budget);

// What a cut took away.
struct CutTokens {
  std::size_t prompt = 0;         // prompt tokens cut, those of dropped turns included
  std::size_t reply = 0;          // reply tokens cut, those of dropped turns included
  std::size_t dropped_turns = 0;  // turns left out whole once max_length was used up
  std::size_t text = 0;           // plain texts' tails

  CutTokens& operator+=(const CutTokens& other) {
    prompt += other.prompt;
    reply += other.reply;
    dropped_turns += other.dropped_turns;
    text += other.text;
    return *this;
  }
};

struct Truncated {
  TokenizedSample sample;
  CutTokens cut;
};

// `sample` cut to max_length turn by turn. `turns` cover the sample from 0, in order, back to
// back (a zt::Error otherwise).
Truncated truncate_turns(const TokenizedSample& sample, const std::vector<Turn>& turns, std::size_t max_length);

TokenizedSample truncate_tail(const TokenizedSample& sample, std::size_t max_length);

}  // namespace zt::train
