// From tokenized samples to the micro-batches the model takes. A micro-batch is one token
// stream of its sequences back to back, described by cu_seqlens (attention never crosses a
// boundary), positions restarting at 0 in each sequence. By default nothing is padded;
// with --padding longest each sequence is padded to the longest of its micro-batch. Without
// --packing a micro-batch holds per_device_train_batch_size samples; with it, that many rows
// of up to max_length tokens, each filled with whole samples.
//
// Data parallel runs take each optimizer step's global batch (micro × accumulation × world
// units) from the epoch's units in order, and only then deal it out to the ranks, so a run
// sees the same samples in the same steps on any number of ranks with the same global batch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace zt::train {

inline constexpr std::int32_t kIgnoreIndex = -100;

// One sample after the chat template: ids, and labels equal to ids where the loss applies
// (the answers) and kIgnoreIndex elsewhere. Not yet shifted.
struct TokenizedSample {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> labels;
};

// Preference pairs packed with each prompt stored once (pack_pairs_sharing_prompts): how
// attention sees every sequence whole (models::SharedPrefixes says how the model uses it).
struct SharedPrefixRows {
  std::vector<std::int32_t> expand;      // [whole tokens]: the packed row each token of the whole sequences is
  std::vector<std::int32_t> own_row;     // [T]: where packed row t stands among the whole rows (its output)
  std::vector<std::int32_t> second_use;  // [T]: where it stands again (a shared prompt row), else -1
  std::vector<std::int32_t> cu_seqlens;  // the whole sequences' bounds
  bool empty() const { return expand.empty(); }
};

struct PackedBatch {
  std::vector<std::int32_t> input_ids;   // [T]
  std::vector<std::int32_t> labels;      // [T], already shifted: labels[t] is the target of position t
  std::vector<std::int32_t> positions;   // [T]
  std::vector<std::int32_t> cu_seqlens;  // [sequences + 1]
  std::int64_t label_tokens = 0;         // labels that are not kIgnoreIndex
  bool filler = false;                   // no data: see filler_batch()
  std::vector<std::size_t> samples{};    // the sample indices packed, in order
  SharedPrefixRows shared{};             // empty unless the pairs' prompts are stored once

  // The bounds of the sequences as the data holds them, each whole (a shared prompt counted in
  // each): the tokens seen and the throughput count these, as HF and TRL count their batches.
  const std::vector<std::int32_t>& whole_sequences() const { return shared.empty() ? cu_seqlens : shared.cu_seqlens; }
};

// What batch sizes count, as sample indices: one sample, or with packing one row of whole
// samples holding up to max_length tokens.
using BatchUnit = std::vector<std::size_t>;

// The units of one epoch in training order: the samples shuffled by (seed, epoch) unless
// `shuffle` is false, then with packing filled into rows in that order. Nothing here depends
// on the world size. Samples longer than max_length must have been truncated already.
std::vector<BatchUnit> epoch_units(const std::vector<TokenizedSample>& samples, std::int64_t max_length, bool packing,
                                   std::uint64_t seed, std::int64_t epoch, bool shuffle = true);

// Preference pairs (--stage dpo): samples 2i and 2i+1 are pair i's chosen and rejected
// answers, one unit, so a micro-batch packs [c0, r0, c1, r1, ...]; the pairs in the order
// shuffled by (seed, epoch) as epoch_units shuffles samples.
std::vector<BatchUnit> pair_units(std::size_t pairs, std::uint64_t seed, std::int64_t epoch, bool shuffle = true);

// The sample indices of each micro-batch of one epoch on one device: the epoch's units,
// batch_size at a time.
std::vector<std::vector<std::size_t>> plan_epoch(const std::vector<TokenizedSample>& samples, std::int64_t batch_size,
                                                 std::int64_t max_length, bool packing, std::uint64_t seed,
                                                 std::int64_t epoch, bool shuffle = true);

// Rank `rank`'s micro-batches (sample indices, in the order it runs them) of one optimizer
// step. The global batch is cut in order into micro-batches of micro_batch units; the i-th
// goes to rank i % world as its (i / world)-th. Every rank gets as many as rank 0: where a
// short last global batch of an epoch runs out, a rank's micro-batch is empty, and it must
// still make that forward and backward pass (with filler_batch) for ZeRO's collectives.
std::vector<std::vector<std::size_t>> deal_global_batch(std::span<const BatchUnit> global_batch,
                                                        std::int64_t micro_batch, int world, int rank);

// How pack() lays out a micro-batch. Padding-free by default. With pad_to_longest, every
// sequence is followed by pad_id up to the longest sequence of the micro-batch, inside its
// own cu_seqlens segment: the pad tokens come after their sample's tokens, so under causal
// attention no real token sees them, and their labels are kIgnoreIndex; the loss and the
// gradients are those of the padding-free layout.
struct BatchLayout {
  bool pad_to_longest = false;
  std::int32_t pad_id = 0;
  // Preference pairs (--stage dpo, without padding or a P-Tuning prefix): a micro-batch of
  // pairs stores each prompt once (pack_pairs_sharing_prompts).
  bool share_pair_prompts = false;
};

// Concatenates the samples of one micro-batch, shifting labels within each sample so the
// last token of a sample never predicts the first of the next. With layout.share_pair_prompts
// and an even number of samples (pairs), pack_pairs_sharing_prompts.
PackedBatch pack(const std::vector<TokenizedSample>& samples, const std::vector<std::size_t>& indices,
                 const BatchLayout& layout = {});

// Pairs [c0, r0, c1, r1, ...] packed with each pair's common prompt run once: the chosen
// sequence whole, then the rejected one from the last token it shares with the chosen one's
// unlabelled start (that token's output predicts the rejected answer's first token, so it is
// kept in both). The labels, and so every log-probability, are those of pack()'s layout, and
// attention sees each sequence whole (batch.shared): the forward gives the same values on a
// quarter fewer tokens at an even prompt/answer split. A pair sharing no more than that one
// token is packed whole.
PackedBatch pack_pairs_sharing_prompts(const std::vector<TokenizedSample>& samples,
                                       const std::vector<std::size_t>& indices);

// A micro-batch that adds nothing to the loss or the gradients: sample `index` with no label,
// marked as a filler so that it counts as no data seen.
PackedBatch filler_batch(const std::vector<TokenizedSample>& samples, std::size_t index,
                         const BatchLayout& layout = {});

}  // namespace zt::train
