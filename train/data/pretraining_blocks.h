// LLaMA-Factory's pre-training stage (`stage: pt`): plain texts, every token trained, no chat
// template. Each text is tokenized without the tokenizer's special tokens and ends with eos,
// as LLaMA-Factory's pretrain processor writes `text + eos_token`. With packing (its default
// under pt) the texts are chained and cut into blocks of exactly max_length tokens as
// `datasets` maps that processor: `batch` texts at a time within each of `num_proc` contiguous
// shards (run_clm_groups), each batch's partial last block dropped; a block may hold the end
// of one text and the start of the next, attending across the eos between them. Without
// packing each text is its own sample, cut to max_length.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/tokenizer/tokenizer.h"
#include "train/data/dataset.h"
#include "train/data/sample_encoding.h"

namespace zt::train {

// `texts` must be plain text (DataFormat::kText); `source` names it in messages.
EncodedDataset pretraining_samples(const Dataset& texts, const std::string& source, const models::Tokenizer& tokenizer,
                                   std::int64_t max_length, bool packing, std::int64_t num_proc = 1,
                                   std::size_t batch = 1000);

// transformers' run_clm.py: each text tokenized as its `tokenizer(texts)` does (the tokenizer's
// own special tokens, GLM's [gMASK] sop, none for Qwen; no eos appended), then its group_texts
// mapped as `datasets` maps it (batched, 1000 texts a batch, over `num_proc` contiguous shards,
// num_proc capped at the number of texts): each batch's ids chained and cut into blocks of
// exactly `block_size`, its remainder dropped (a batch shorter than a block gives none), labels
// the inputs. Data too short for one block at all is an error naming `source`. `threads` > 1
// tokenizes on that many threads, with the same result.
EncodedDataset run_clm_blocks(const Dataset& texts, const std::string& source, const models::Tokenizer& tokenizer,
                              std::int64_t block_size, std::int64_t num_proc, int threads);

// run_clm's block size: `given` (--block_size) capped at the tokenizer's model_max_length
// (tokenizer_config.json; unset when it states none, which transformers reads as unlimited), or
// without it model_max_length, or min(1024, max_position_embeddings) when that is larger (1024
// when the config states no positions). `note` says when run_clm would have logged a warning.
std::int64_t run_clm_block_size(std::optional<std::int64_t> given, std::optional<double> model_max_length,
                                std::int64_t max_position_embeddings, std::string& note);

// The [begin, end) text ranges run_clm's group_texts sees: `batch` texts at a time within each of
// `num_proc` contiguous shards, as datasets' Dataset.shard(contiguous=True) cuts them.
std::vector<std::pair<std::size_t, std::size_t>> run_clm_groups(std::size_t texts, std::int64_t num_proc,
                                                                std::size_t batch = 1000);

}  // namespace zt::train
