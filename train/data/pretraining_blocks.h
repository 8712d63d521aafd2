// LLaMA-Factory's pre-training stage (`stage: pt`): plain texts, every token trained, no chat
// template. Each text is tokenized without the tokenizer's special tokens and ends with eos,
// as LLaMA-Factory's pretrain processor writes `text + eos_token`. With packing (its default
// under pt) the texts are chained and cut into blocks of exactly max_length tokens, the last
// partial block dropped, as run_clm's group_texts does; a block may hold the end of one text
// and the start of the next, attending across the eos between them. Without packing each text
// is its own sample, cut to max_length.
#pragma once

#include <cstdint>

#include "text/tokenizer/tokenizer.h"
#include "train/data/dataset.h"
#include "train/data/sample_encoding.h"

namespace zt::train {

// `texts` must be plain text (DataFormat::kText); `source` names it in messages.
EncodedDataset pretraining_samples(const Dataset& texts, const std::string& source, const models::Tokenizer& tokenizer,
                                   std::int64_t max_length, bool packing);

}  // namespace zt::train
