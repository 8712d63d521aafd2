// pack_pairs_sharing_prompts (declared in batching.h beside pack(), whose layout it keeps for
// the labels): a pair's prompt runs once, attention still sees both sequences whole.
#include <algorithm>
#include <string>

#include "runtime/error.h"
#include "train/data/batching.h"

namespace zt::train {
namespace {

// How many leading tokens of the rejected sequence can be left out: those before the last
// token it shares with the chosen sequence, provided none of them carries a label. 0: none.
std::size_t shared_rows(const TokenizedSample& chosen, const TokenizedSample& rejected) {
  std::size_t common = 0;
  while (common < chosen.ids.size() && common < rejected.ids.size() && chosen.ids[common] == rejected.ids[common])
    ++common;
  std::size_t first_label = 0;
  while (first_label < rejected.labels.size() && rejected.labels[first_label] == kIgnoreIndex) ++first_label;
  const std::size_t shared = std::min(common, first_label);
  return shared >= 2 ? shared - 1 : 0;
}

// Appends sample's tokens from `first` on to batch, labels shifted as pack() shifts them.
void append_tokens(PackedBatch& batch, const TokenizedSample& sample, std::size_t first) {
  const std::size_t length = sample.ids.size();
  for (std::size_t t = first; t < length; ++t) {
    batch.input_ids.push_back(sample.ids[t]);
    batch.positions.push_back(static_cast<std::int32_t>(t));
    const std::int32_t target = t + 1 < length ? sample.labels[t + 1] : kIgnoreIndex;
    batch.labels.push_back(target);
    if (target != kIgnoreIndex) ++batch.label_tokens;
  }
  batch.cu_seqlens.push_back(static_cast<std::int32_t>(batch.input_ids.size()));
}

// Packed rows [begin, end) read in order as the next rows of the whole sequences.
void read_rows(SharedPrefixRows& shared, std::int32_t begin, std::int32_t end, bool again) {
  for (std::int32_t row = begin; row < end; ++row) {
    const auto whole = static_cast<std::int32_t>(shared.expand.size());
    shared.expand.push_back(row);
    (again ? shared.second_use : shared.own_row)[static_cast<std::size_t>(row)] = whole;
  }
}

}  // namespace

PackedBatch pack_pairs_sharing_prompts(const std::vector<TokenizedSample>& samples,
                                       const std::vector<std::size_t>& indices) {
  ZT_REQUIRE(indices.size() % 2 == 0, "preference batch: " + std::to_string(indices.size()) +
                                          " samples do not make pairs of a chosen and a rejected answer");
  PackedBatch batch;
  batch.samples = indices;
  batch.cu_seqlens.push_back(0);
  std::vector<std::size_t> skipped;  // per pair: the rejected sequence's rows left out
  for (std::size_t i = 0; i < indices.size(); i += 2) {
    const TokenizedSample &chosen = samples.at(indices[i]), &rejected = samples.at(indices[i + 1]);
    for (const TokenizedSample* s : {&chosen, &rejected})
      ZT_REQUIRE(s->ids.size() == s->labels.size() && !s->ids.empty(),
                 "preference batch: a sample of pair " + std::to_string(i / 2) + " is empty or has " +
                     std::to_string(s->ids.size()) + " ids but " + std::to_string(s->labels.size()) + " labels");
    skipped.push_back(shared_rows(chosen, rejected));
    append_tokens(batch, chosen, 0);
    append_tokens(batch, rejected, skipped.back());
  }
  SharedPrefixRows& shared = batch.shared;
  shared.own_row.assign(batch.input_ids.size(), -1);
  shared.second_use.assign(batch.input_ids.size(), -1);
  shared.cu_seqlens.push_back(0);
  for (std::size_t pair = 0; pair < skipped.size(); ++pair) {
    const std::int32_t chosen_begin = batch.cu_seqlens[2 * pair], rejected_begin = batch.cu_seqlens[2 * pair + 1];
    read_rows(shared, chosen_begin, rejected_begin, false);
    shared.cu_seqlens.push_back(static_cast<std::int32_t>(shared.expand.size()));
    read_rows(shared, chosen_begin, chosen_begin + static_cast<std::int32_t>(skipped[pair]), true);
    read_rows(shared, rejected_begin, batch.cu_seqlens[2 * pair + 2], false);
    shared.cu_seqlens.push_back(static_cast<std::int32_t>(shared.expand.size()));
  }
  return batch;
}

}  // namespace zt::train
