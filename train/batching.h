// From tokenized samples to the micro-batches the model takes. A micro-batch is one token
// stream of its sequences back to back, described by cu_seqlens (attention never crosses a
// boundary), positions restarting at 0 in each sequence. By default nothing is padded;
// with --padding longest each sequence is padded to the longest of its micro-batch. Without
// --packing a micro-batch holds per_device_train_batch_size samples; with it, that many rows
// of up to max_length tokens, each filled with whole samples.
#pragma once

#include <cstdint>
#include <vector>

namespace zt::train {

inline constexpr std::int32_t kIgnoreIndex = -100;

// One sample after the chat template: ids, and labels equal to ids where the loss applies
// (the answers) and kIgnoreIndex elsewhere. Not yet shifted.
struct TokenizedSample {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> labels;
};

struct PackedBatch {
  std::vector<std::int32_t> input_ids;   // [T]
  std::vector<std::int32_t> labels;      // [T], already shifted: labels[t] is the target of position t
  std::vector<std::int32_t> positions;   // [T]
  std::vector<std::int32_t> cu_seqlens;  // [sequences + 1]
  std::int64_t label_tokens = 0;         // labels that are not kIgnoreIndex
};

// The sample indices of each micro-batch of one epoch, shuffled by (seed, epoch) unless
// `shuffle` is false. Samples longer than max_length must have been truncated already.
std::vector<std::vector<std::size_t>> plan_epoch(const std::vector<TokenizedSample>& samples, std::int64_t batch_size,
                                                 std::int64_t max_length, bool packing, std::uint64_t seed,
                                                 std::int64_t epoch, bool shuffle = true);

// How pack() lays out a micro-batch. Padding-free by default. With pad_to_longest, every
// sequence is followed by pad_id up to the longest sequence of the micro-batch, inside its
// own cu_seqlens segment: the pad tokens come after their sample's tokens, so under causal
// attention no real token sees them, and their labels are kIgnoreIndex; the loss and the
// gradients are those of the padding-free layout.
struct BatchLayout {
  bool pad_to_longest = false;
  std::int32_t pad_id = 0;
};

// Concatenates the samples of one micro-batch, shifting labels within each sample so the
// last token of a sample never predicts the first of the next.
PackedBatch pack(const std::vector<TokenizedSample>& samples, const std::vector<std::size_t>& indices,
                 const BatchLayout& layout = {});

}  // namespace zt::train
