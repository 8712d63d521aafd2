// Paged KV caches for the decode attention tests: random pools whose pages are handed to the
// sequences in a shuffled order (so no sequence's pages are contiguous or in order), block
// tables padded with -1 past what each sequence uses, spare pages full of values that must
// never be read, and an independent reference that gathers each sequence's tokens back into
// the packed layout and runs ops::attention_forward causally with the query as the last token.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ops/attention/attention.h"
#include "ops/attention/decode_attention.h"
#include "tensor/tensor.h"

namespace zt::testing {

struct DecodeCase {
  std::vector<std::int64_t> lengths;  // cached tokens per sequence
  std::int64_t heads = 4;
  std::int64_t kv_heads = 2;
  std::int64_t head_dim = 16;
  std::int64_t block_size = 16;
  std::int64_t spare_blocks = 3;   // pool pages no sequence uses
  std::int64_t spare_columns = 2;  // block_table columns past the longest sequence's need
  double scale = 0.0;              // 0: 1 / sqrt(head_dim)

  std::int64_t batch() const { return static_cast<std::int64_t>(lengths.size()); }
  std::int64_t blocks_for(std::int64_t len) const { return (len + block_size - 1) / block_size; }
  std::int64_t table_columns() const {
    std::int64_t most = 0;
    for (std::int64_t l : lengths) most = std::max(most, blocks_for(l));
    return most + spare_columns;
  }
  std::int64_t used_blocks() const {
    std::int64_t sum = 0;
    for (std::int64_t l : lengths) sum += blocks_for(l);
    return sum;
  }
  double softmax_scale() const { return scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim)); }
  std::string str() const {
    std::string s = "lengths {";
    for (std::size_t i = 0; i < lengths.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(lengths[i]);
    if (lengths.size() > 8) s += ", ... (" + std::to_string(lengths.size()) + " sequences)";
    return s + "} heads " + std::to_string(heads) + "/" + std::to_string(kv_heads) + " head_dim " +
           std::to_string(head_dim) + " block_size " + std::to_string(block_size);
  }
};

struct DecodeTensors {
  Tensor q, key_pool, value_pool, block_table, seq_lens;
};

// CPU tensors of `dtype`: standard normal q and pools (the spare pages included), pages dealt
// to the sequences in a shuffled order, unused table entries -1.
inline DecodeTensors random_decode_inputs(const DecodeCase& c, DType dtype, std::uint64_t seed) {
  DecodeTensors t;
  const std::int64_t blocks = c.used_blocks() + c.spare_blocks;
  t.q = Tensor::normal({c.batch(), c.heads, c.head_dim}, seed, 0, 0.0, 1.0, dtype);
  const Shape pool{blocks, c.block_size, c.kv_heads, c.head_dim};
  t.key_pool = Tensor::normal(pool, seed + 1, 0, 0.0, 1.0, dtype);
  t.value_pool = Tensor::normal(pool, seed + 2, 0, 0.0, 1.0, dtype);
  std::vector<std::int64_t> order(static_cast<std::size_t>(blocks));
  for (std::int64_t i = 0; i < blocks; ++i) order[i] = i;
  std::mt19937_64 rng(seed + 3);
  std::shuffle(order.begin(), order.end(), rng);
  const std::int64_t columns = c.table_columns();
  std::vector<double> table(static_cast<std::size_t>(c.batch() * columns), -1.0), lens;
  std::size_t next = 0;
  for (std::int64_t b = 0; b < c.batch(); ++b) {
    for (std::int64_t i = 0; i < c.blocks_for(c.lengths[b]); ++i)
      table[b * columns + i] = static_cast<double>(order[next++]);
    lens.push_back(static_cast<double>(c.lengths[b]));
  }
  t.block_table = Tensor::from_values(table, {c.batch(), columns}, DType::kI32);
  t.seq_lens = Tensor::from_values(lens, {c.batch()}, DType::kI32);
  return t;
}

inline DecodeTensors decode_on_gpu(const DecodeTensors& t) {
  return {t.q.to(Device::cuda()), t.key_pool.to(Device::cuda()), t.value_pool.to(Device::cuda()),
          t.block_table.to(Device::cuda()), t.seq_lens.to(Device::cuda())};
}

// The reference in float64: each sequence's tokens gathered from their pages into packed k and
// v, a packed query tensor whose last row per sequence is the decode query (the other rows are
// noise), and causal ops::attention_forward, whose last row per sequence sees every token.
inline Tensor packed_reference(const DecodeCase& c, const DecodeTensors& t) {
  const std::int64_t H = c.heads, G = c.kv_heads, D = c.head_dim, P = c.block_size;
  const std::vector<double> q = t.q.to_vector(), kp = t.key_pool.to_vector(), vp = t.value_pool.to_vector();
  const std::vector<double> table = t.block_table.to_vector();
  const std::int64_t columns = t.block_table.size(1);
  std::int64_t total = 0;
  for (std::int64_t l : c.lengths) total += l;
  std::vector<double> k, v, offsets{0.0};
  for (std::int64_t b = 0; b < c.batch(); ++b) {
    for (std::int64_t j = 0; j < c.lengths[b]; ++j) {
      const auto page = static_cast<std::int64_t>(table[b * columns + j / P]);
      const std::int64_t row = (page * P + j % P) * G * D;
      k.insert(k.end(), kp.begin() + row, kp.begin() + row + G * D);
      v.insert(v.end(), vp.begin() + row, vp.begin() + row + G * D);
    }
    offsets.push_back(offsets.back() + static_cast<double>(c.lengths[b]));
  }
  Tensor packed_q = Tensor::normal({total, H, D}, 77, 0, 0.0, 1.0, DType::kF64);
  double* pq = packed_q.data<double>();
  for (std::int64_t b = 0; b < c.batch(); ++b) {
    const auto last = static_cast<std::int64_t>(offsets[b + 1]) - 1;
    std::copy(q.begin() + b * H * D, q.begin() + (b + 1) * H * D, pq + last * H * D);
  }
  ops::AttentionConfig config;
  config.softmax_scale = c.softmax_scale();
  config.causal = true;
  Tensor out = ops::attention_forward(packed_q, Tensor::from_values(k, {total, G, D}, DType::kF64),
                                      Tensor::from_values(v, {total, G, D}, DType::kF64),
                                      Tensor::from_values(offsets, {c.batch() + 1}, DType::kI32), config)
                   .out;
  const std::vector<double> all = out.to_vector();
  std::vector<double> rows;
  for (std::int64_t b = 0; b < c.batch(); ++b) {
    const auto last = static_cast<std::int64_t>(offsets[b + 1]) - 1;
    rows.insert(rows.end(), all.begin() + last * H * D, all.begin() + (last + 1) * H * D);
  }
  return Tensor::from_values(rows, {c.batch(), H, D}, DType::kF64);
}

inline ops::DecodeAttentionOptions with_splits(int num_splits) {
  ops::DecodeAttentionOptions options;
  options.num_splits = num_splits;
  return options;
}

}  // namespace zt::testing
