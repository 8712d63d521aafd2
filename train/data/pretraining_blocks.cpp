#include "train/data/pretraining_blocks.h"

#include <algorithm>
#include <optional>

#include "runtime/error.h"

namespace zt::train {
namespace {

// One text's ids: no special tokens before it (add_special_tokens=False), eos after it.
std::vector<std::int32_t> text_ids(const std::string& text, const models::Tokenizer& tokenizer,
                                   std::optional<models::TokenId> eos) {
  std::vector<std::int32_t> ids = tokenizer.encode(text, /*add_special_tokens=*/false);
  if (eos) ids.push_back(*eos);
  return ids;
}

TokenizedSample all_trained(std::vector<std::int32_t> ids) {
  TokenizedSample sample;
  sample.labels = ids;
  sample.ids = std::move(ids);
  return sample;
}

// Blocks of exactly `block` ids cut from `chained`, the remainder dropped (run_clm's group_texts).
void append_blocks(const std::vector<std::int32_t>& chained, std::size_t block, EncodedDataset& out) {
  for (std::size_t start = 0; start + block <= chained.size(); start += block)
    out.samples.push_back(all_trained({chained.begin() + static_cast<std::ptrdiff_t>(start),
                                       chained.begin() + static_cast<std::ptrdiff_t>(start + block)}));
}

// What chaining a dataset's groups put together: all the ids, and the most one group held.
struct Chained {
  std::size_t total = 0, longest = 0;
};

// The ids of each group of texts ([begin, end) ranges, run_clm_groups) chained and cut into
// blocks; ids_of(i) gives text i's ids.
template <typename IdsOf>
Chained append_group_blocks(const std::vector<std::pair<std::size_t, std::size_t>>& groups, IdsOf&& ids_of,
                            std::size_t block, EncodedDataset& out) {
  Chained sizes;
  for (const auto& [begin, end] : groups) {
    std::vector<std::int32_t> chained;
    for (std::size_t i = begin; i < end; ++i) {
      const auto& ids = ids_of(i);
      chained.insert(chained.end(), ids.begin(), ids.end());
    }
    sizes.total += chained.size();
    sizes.longest = std::max(sizes.longest, chained.size());
    append_blocks(chained, block, out);
  }
  return sizes;
}

}  // namespace

EncodedDataset pretraining_samples(const Dataset& texts, const std::string& source, const models::Tokenizer& tokenizer,
                                   std::int64_t max_length, bool packing, std::int64_t num_proc, std::size_t batch) {
  ZT_REQUIRE(texts.format == DataFormat::kText,
             source + ": --stage pt trains on plain text, and this is " + format_name(texts.format) +
                 " data; give {\"text\": ...} samples (in dataset_info.json: \"columns\": {\"prompt\": \"text\"}), "
                 "or use --stage sft");
  ZT_REQUIRE(max_length > 1, "--max_length (cutoff_len) must be > 1, got " + std::to_string(max_length));
  const std::optional<models::TokenId> eos = tokenizer.special_ids().eos;
  const auto block = static_cast<std::size_t>(max_length);
  EncodedDataset out;
  if (!packing) {
    for (const std::string& text : texts.texts) {
      std::vector<std::int32_t> ids = text_ids(text, tokenizer, eos);
      if (ids.size() > block) {
        out.cut.text += ids.size() - block;
        ids.resize(block);
        ++out.truncated;
      }
      if (ids.size() < 2) {
        ++out.dropped;  // one token predicts nothing
        continue;
      }
      out.samples.push_back(all_trained(std::move(ids)));
    }
    return out;
  }
  const Chained chained = append_group_blocks(
      run_clm_groups(texts.texts.size(), num_proc, batch),
      [&](std::size_t i) { return text_ids(texts.texts[i], tokenizer, eos); }, block, out);
  ZT_REQUIRE(!out.samples.empty(), source + ": its texts hold " + std::to_string(chained.longest) +
                                       " tokens in a batch of --preprocessing_batch_size " + std::to_string(batch) +
                                       ", fewer than one block of --max_length (cutoff_len) " +
                                       std::to_string(max_length) +
                                       "; give more text, a smaller cutoff_len, or --packing false");
  return out;
}

std::int64_t run_clm_block_size(std::optional<std::int64_t> given, std::optional<double> model_max_length,
                                std::int64_t max_position_embeddings, std::string& note) {
  const double limit = model_max_length.value_or(1e30);  // transformers' VERY_LARGE_INTEGER
  const std::int64_t positions = max_position_embeddings > 0 ? max_position_embeddings : 1024;
  if (given) {
    if (static_cast<double>(*given) <= limit) return *given;
    note = "--block_size " + std::to_string(*given) + " is larger than the tokenizer's model_max_length; using " +
           std::to_string(static_cast<std::int64_t>(limit)) + " (as run_clm.py does)";
    return static_cast<std::int64_t>(limit);
  }
  if (limit <= static_cast<double>(positions)) return static_cast<std::int64_t>(limit);
  const std::int64_t block = std::min<std::int64_t>(1024, positions);
  note = "--block_size not given: using " + std::to_string(block) +
         " (run_clm.py's default, min(1024, max_position_embeddings), the tokenizer's model_max_length being " +
         (model_max_length ? "larger" : "unset") + "); --block_size N sets it";
  return block;
}

std::vector<std::pair<std::size_t, std::size_t>> run_clm_groups(std::size_t texts, std::int64_t num_proc,
                                                                std::size_t batch) {
  // datasets' map: num_proc above the number of rows is capped at it; None or 1 is one shard.
  const std::size_t shards = std::max<std::size_t>(
      1, std::min<std::size_t>(static_cast<std::size_t>(std::max<std::int64_t>(num_proc, 1)), texts));
  const std::size_t div = texts / shards;
  const std::size_t mod = texts % shards;
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t index = 0; index < shards; ++index) {
    const std::size_t start = div * index + std::min(index, mod);
    const std::size_t end = start + div + (index < mod ? 1 : 0);
    for (std::size_t at = start; at < end; at += batch) groups.emplace_back(at, std::min(at + batch, end));
  }
  return groups;
}

EncodedDataset run_clm_blocks(const Dataset& texts, const std::string& source, const models::Tokenizer& tokenizer,
                              std::int64_t block_size, std::int64_t num_proc, int threads) {
  ZT_REQUIRE(texts.format == DataFormat::kText,
             source + ": run_clm's blocks are cut from plain text, and this is " + format_name(texts.format) + " data");
  ZT_REQUIRE(block_size > 0, "--block_size must be > 0, got " + std::to_string(block_size));
  const std::size_t count = texts.texts.size();
  std::vector<std::vector<std::int32_t>> ids(count);
  run_in_parts(count, encoding_parts(count, std::max(threads, 0)),
               [&](std::size_t, std::size_t begin, std::size_t end) {
                 for (std::size_t i = begin; i < end; ++i)
                   ids[i] = tokenizer.encode(texts.texts[i], /*add_special_tokens=*/true);
               });
  EncodedDataset out;
  const Chained chained = append_group_blocks(
      run_clm_groups(count, num_proc), [&](std::size_t i) -> const std::vector<std::int32_t>& { return ids[i]; },
      static_cast<std::size_t>(block_size), out);
  ZT_REQUIRE(!out.samples.empty(), source + ": its texts hold " + std::to_string(chained.total) +
                                       " tokens, fewer than one block of --block_size " + std::to_string(block_size) +
                                       " (run_clm: \"block_size of " + std::to_string(block_size) +
                                       " is too big\"); give a smaller --block_size or more text");
  return out;
}

}  // namespace zt::train
