#include "train/data/pretraining_blocks.h"

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

}  // namespace

EncodedDataset pretraining_samples(const Dataset& texts, const std::string& source, const models::Tokenizer& tokenizer,
                                   std::int64_t max_length, bool packing) {
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
  std::vector<std::int32_t> chained;
  for (const std::string& text : texts.texts) {
    const std::vector<std::int32_t> ids = text_ids(text, tokenizer, eos);
    chained.insert(chained.end(), ids.begin(), ids.end());
  }
  ZT_REQUIRE(chained.size() >= block, source + ": its texts hold " + std::to_string(chained.size()) +
                                          " tokens, fewer than one block of --max_length (cutoff_len) " +
                                          std::to_string(max_length) +
                                          "; give more text, a smaller cutoff_len, or --packing false");
  for (std::size_t start = 0; start + block <= chained.size(); start += block)
    out.samples.push_back(all_trained({chained.begin() + static_cast<std::ptrdiff_t>(start),
                                       chained.begin() + static_cast<std::ptrdiff_t>(start + block)}));
  return out;
}

}  // namespace zt::train
