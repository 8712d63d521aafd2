// A packed batch: several token sequences laid back to back in one row, as the model's
// forward takes them (models/model.h), with positions restarting at 0 for each sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/embedding/row_gather.h"
#include "tensor/tensor.h"

namespace zt::models {

inline constexpr std::int64_t kIgnoreIndex = -100;

// Sequences stored without a prefix they share with an earlier sequence of the batch (a
// preference pair's rejected answer after its chosen one's prompt: train/data/pair_prompts.h):
// attention still sees every sequence whole. `expand` gathers the packed rows into the whole
// sequences (a shared row twice), `compact` gathers attention's output rows back to the packed
// rows, and cu_seqlens bounds the whole sequences. Everything else runs on the packed rows.
struct SharedPrefixes {
  ops::RowGather expand;
  ops::RowGather compact;
  Tensor cu_seqlens;  // [sequences + 1] int32
  bool defined() const { return expand.index.defined(); }
};

struct PackedBatch {
  Tensor input_ids;            // [tokens] int64
  Tensor positions;            // [tokens] int64
  Tensor cu_seqlens;           // [sequences + 1] int32
  Tensor labels;               // [tokens] int64, aligned with input_ids; undefined when not given
  SharedPrefixes shared = {};  // undefined: every sequence is stored whole
  std::int64_t tokens() const { return input_ids.defined() ? input_ids.numel() : 0; }
};

// Packs `sequences` (none empty) on `device`. With `labels`, one list per sequence of its
// length, aligned with the tokens (labels[t] is the token expected after token t).
PackedBatch pack_sequences(const std::vector<std::vector<std::int64_t>>& sequences,
                           const std::vector<std::vector<std::int64_t>>& labels = {}, Device device = Device::cpu());

// Next-token labels for language modelling: each token is labelled with the one after it in
// its sequence, and the last token of every sequence with kIgnoreIndex.
std::vector<std::vector<std::int64_t>> next_token_labels(const std::vector<std::vector<std::int64_t>>& sequences);

}  // namespace zt::models
