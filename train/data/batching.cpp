#include "train/data/batching.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "runtime/error.h"

namespace zt::train {
namespace {

std::vector<std::size_t> epoch_order(std::size_t count, std::uint64_t seed, std::int64_t epoch, bool shuffle) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(epoch));
  // Fisher-Yates with our own index draw: std::shuffle's sequence differs between standard
  // libraries, and resuming must reproduce the order exactly.
  for (std::size_t i = count; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

// Whole samples into rows of at most max_length tokens, in order (next-fit keeps the
// shuffled order, which keeps resuming simple).
std::vector<std::vector<std::size_t>> fill_rows(const std::vector<TokenizedSample>& samples,
                                                const std::vector<std::size_t>& order, std::int64_t max_length) {
  std::vector<std::vector<std::size_t>> rows;
  std::int64_t used = max_length;
  for (std::size_t index : order) {
    const auto length = static_cast<std::int64_t>(samples[index].ids.size());
    if (used + length > max_length) rows.emplace_back(), used = 0;
    rows.back().push_back(index);
    used += length;
  }
  return rows;
}

}  // namespace

std::vector<BatchUnit> epoch_units(const std::vector<TokenizedSample>& samples, std::int64_t max_length, bool packing,
                                   std::uint64_t seed, std::int64_t epoch, bool shuffle) {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    ZT_REQUIRE(!samples[i].ids.empty(), "sample " + std::to_string(i) + " has no tokens");
    ZT_REQUIRE(static_cast<std::int64_t>(samples[i].ids.size()) <= max_length,
               "sample " + std::to_string(i) + " has " + std::to_string(samples[i].ids.size()) +
                   " tokens, more than max_length " + std::to_string(max_length));
  }
  std::vector<std::size_t> order = epoch_order(samples.size(), seed, epoch, shuffle);
  if (packing) return fill_rows(samples, order, max_length);
  std::vector<BatchUnit> units;
  for (std::size_t index : order) units.push_back({index});
  return units;
}

std::vector<BatchUnit> pair_units(std::size_t pairs, std::uint64_t seed, std::int64_t epoch, bool shuffle) {
  std::vector<BatchUnit> units;
  for (std::size_t pair : epoch_order(pairs, seed, epoch, shuffle)) units.push_back({2 * pair, 2 * pair + 1});
  return units;
}

std::vector<std::vector<std::size_t>> plan_epoch(const std::vector<TokenizedSample>& samples, std::int64_t batch_size,
                                                 std::int64_t max_length, bool packing, std::uint64_t seed,
                                                 std::int64_t epoch, bool shuffle) {
  return deal_global_batch(epoch_units(samples, max_length, packing, seed, epoch, shuffle), batch_size, 1, 0);
}

std::vector<std::vector<std::size_t>> deal_global_batch(std::span<const BatchUnit> global_batch,
                                                        std::int64_t micro_batch, int world, int rank) {
  ZT_REQUIRE(micro_batch > 0, "batch size must be > 0");
  ZT_REQUIRE(world > 0 && rank >= 0 && rank < world,
             "rank " + std::to_string(rank) + " is outside a world of " + std::to_string(world));
  const auto micro = static_cast<std::size_t>(micro_batch);
  const auto ranks = static_cast<std::size_t>(world);
  const std::size_t micro_batches = (global_batch.size() + micro - 1) / micro;
  std::vector<std::vector<std::size_t>> mine((micro_batches + ranks - 1) / ranks);
  for (std::size_t slot = 0; slot < mine.size(); ++slot) {
    const std::size_t first = (slot * ranks + static_cast<std::size_t>(rank)) * micro;
    for (std::size_t u = first; u < std::min(global_batch.size(), first + micro); ++u)
      mine[slot].insert(mine[slot].end(), global_batch[u].begin(), global_batch[u].end());
  }
  return mine;
}

PackedBatch pack(const std::vector<TokenizedSample>& samples, const std::vector<std::size_t>& indices,
                 const BatchLayout& layout) {
  if (layout.share_pair_prompts && !layout.pad_to_longest && indices.size() >= 2 && indices.size() % 2 == 0)
    return pack_pairs_sharing_prompts(samples, indices);
  std::size_t longest = 0;
  for (std::size_t index : indices) longest = std::max(longest, samples.at(index).ids.size());
  PackedBatch batch;
  batch.samples = indices;
  batch.cu_seqlens.push_back(0);
  for (std::size_t index : indices) {
    const TokenizedSample& sample = samples.at(index);
    ZT_REQUIRE(sample.ids.size() == sample.labels.size(), "sample " + std::to_string(index) + " has " +
                                                              std::to_string(sample.ids.size()) + " ids but " +
                                                              std::to_string(sample.labels.size()) + " labels");
    const auto length = static_cast<std::int32_t>(sample.ids.size());
    for (std::int32_t t = 0; t < length; ++t) {
      batch.input_ids.push_back(sample.ids[t]);
      batch.positions.push_back(t);
      std::int32_t target = t + 1 < length ? sample.labels[t + 1] : kIgnoreIndex;
      batch.labels.push_back(target);
      if (target != kIgnoreIndex) ++batch.label_tokens;
    }
    const auto padded = static_cast<std::int32_t>(layout.pad_to_longest ? longest : sample.ids.size());
    for (std::int32_t t = length; t < padded; ++t) {
      batch.input_ids.push_back(layout.pad_id);
      batch.positions.push_back(t);
      batch.labels.push_back(kIgnoreIndex);
    }
    batch.cu_seqlens.push_back(batch.cu_seqlens.back() + padded);
  }
  return batch;
}

PackedBatch filler_batch(const std::vector<TokenizedSample>& samples, std::size_t index, const BatchLayout& layout) {
  PackedBatch batch = pack(samples, {index}, layout);
  std::fill(batch.labels.begin(), batch.labels.end(), kIgnoreIndex);
  batch.label_tokens = 0;
  batch.filler = true;
  return batch;
}

}  // namespace zt::train
