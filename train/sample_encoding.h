// Conversations to training samples through a chat template: ids, and labels that are the
// ids on the assistant's answers (every token with --train_on_prompt) and -100 elsewhere,
// truncated to --max_length. With workers > 0 (--dataloader_num_workers) the samples are
// encoded on that many threads; the result is the same, in the same order.
#pragma once

#include <vector>

#include "models/chat_template.h"
#include "train/batching.h"
#include "train/dataset.h"

namespace zt::train {

struct EncodedDataset {
  std::vector<TokenizedSample> samples;
  std::size_t truncated = 0;  // samples cut to max_length
  std::size_t dropped = 0;    // samples left with no label to learn from
};

// Tokenizers and chat templates are immutable once loaded (a byte-level BPE's cache of
// merged pieces is locked, regex match data is per thread), so the workers share them.
EncodedDataset encode_dataset(const Dataset& dataset, const models::ChatTemplate& chat_template,
                              const models::Tokenizer& tokenizer, std::int64_t max_length, bool train_on_prompt,
                              int workers = 0);

}  // namespace zt::train
