// The inference ops on the CPU: decode attention over a paged KV cache against packed causal
// attention of the same tokens (shuffled pages, GQA, lengths off block boundaries, every
// dtype), write_kv_slots (shuffled and skipped slots, views of a fused projection, then read
// back by decode attention; with RoPE before it in one op), argmax_rows (ties, negatives, NaN, 16-bit rounding), and
// the errors of each, asserted by message.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda/attention/decode/decode_attention.cuh"
#include "ops/attention/decode_attention.h"
#include "ops/attention/kv_cache_write.h"
#include "ops/reduce/reduce.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/ops/attention/decode_attention_test_util.h"

namespace zt {
namespace {

using testing::DecodeCase;
using testing::DecodeTensors;
using testing::error_of;
using testing::expect_mentions;
using testing::packed_reference;
using testing::random_decode_inputs;

Tensor run_decode(const DecodeCase& c, const DecodeTensors& t) {
  return ops::decode_attention(t.q, t.key_pool, t.value_pool, t.block_table, t.seq_lens, c.softmax_scale());
}

void expect_matches_reference(const DecodeCase& c, DType dtype, double tolerance, std::uint64_t seed) {
  const std::string what = std::string(dtype_name(dtype)) + " " + c.str();
  DecodeTensors t = random_decode_inputs(c, dtype, seed);
  Tensor out = run_decode(c, t);
  ASSERT_EQ(out.shape(), (Shape{c.batch(), c.heads, c.head_dim})) << what;
  ASSERT_EQ(out.dtype(), dtype) << what;
  Tensor reference = packed_reference(c, t);
  EXPECT_LE(relative_error(out.to(DType::kF64), reference), tolerance) << what;
}

// ---- decode_attention ----

TEST(DecodeAttention, MatchesPackedCausalAttentionOnAwkwardShapes) {
  std::vector<std::int64_t> many;
  for (int b = 0; b < 33; ++b) many.push_back(std::vector<std::int64_t>{1, 17, 100, 5, 33, 64, 2}[b % 7]);
  const std::vector<DecodeCase> cases = {
      {{17}, 6, 2, 16, 16},  {{1, 17, 100}, 7, 7, 64, 32}, {{100, 1, 17}, 14, 2, 128, 16},
      {many, 14, 2, 16, 16}, {many, 6, 2, 64, 32},
  };
  std::uint64_t seed = 10;
  for (const DecodeCase& c : cases) {
    expect_matches_reference(c, DType::kF64, 1e-10, seed += 10);
    expect_matches_reference(c, DType::kF32, 1e-5, seed += 10);
  }
}

TEST(DecodeAttention, SixteenBitInputsAccumulateInFloat) {
  const DecodeCase c{{1, 17, 100}, 14, 2, 64, 16};
  expect_matches_reference(c, DType::kBF16, 1e-2, 300);
  expect_matches_reference(c, DType::kF16, 1e-2, 310);
}

TEST(DecodeAttention, OneTokenReturnsItsValueAndBlockSizeOneWorks) {
  // A single cached token: softmax over one key is 1, so the output is that token's value.
  DecodeCase c{{1, 1}, 4, 2, 8, 1};
  DecodeTensors t = random_decode_inputs(c, DType::kF64, 5);
  const std::vector<double> out = run_decode(c, t).to_vector(), pool = t.value_pool.to_vector();
  const std::vector<double> table = t.block_table.to_vector();
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 4; ++h)
      for (std::int64_t d = 0; d < 8; ++d) {
        const auto page = static_cast<std::int64_t>(table[b * t.block_table.size(1)]);
        EXPECT_DOUBLE_EQ(out[(b * 4 + h) * 8 + d], pool[(page * 2 + h / 2) * 8 + d]) << b << " " << h << " " << d;
      }
  c.lengths = {5, 3, 9};
  expect_matches_reference(c, DType::kF64, 1e-10, 6);
}

TEST(DecodeAttention, IgnoresUnusedPagesAndTableEntries) {
  const DecodeCase c{{20, 3}, 4, 2, 16, 16};
  DecodeTensors t = random_decode_inputs(c, DType::kF64, 40);
  Tensor first = run_decode(c, t);
  // Scribble over every page no sequence uses and over the table past each sequence's pages.
  std::vector<double> table = t.block_table.to_vector();
  std::vector<bool> used(static_cast<std::size_t>(t.key_pool.size(0)), false);
  const std::int64_t columns = t.block_table.size(1);
  for (std::int64_t b = 0; b < c.batch(); ++b)
    for (std::int64_t i = 0; i < columns; ++i) {
      if (i < c.blocks_for(c.lengths[b]))
        used[static_cast<std::size_t>(table[b * columns + i])] = true;
      else
        table[b * columns + i] = 12345;
    }
  for (std::int64_t page = 0; page < t.key_pool.size(0); ++page)
    if (!used[page]) {
      t.key_pool.select(0, page).fill_(1e6);
      t.value_pool.select(0, page).fill_(-1e6);
    }
  t.block_table = Tensor::from_values(table, t.block_table.shape(), DType::kI32);
  EXPECT_EQ(max_abs_diff(run_decode(c, t), first), 0.0);
}

TEST(DecodeAttention, AcceptsAStridedQueryAndWritesIntoOut) {
  const DecodeCase c{{9, 30}, 4, 2, 16, 16};
  DecodeTensors t = random_decode_inputs(c, DType::kF32, 50);
  Tensor want = run_decode(c, t);
  // q as the first 4 heads of a fused [batch, 8 heads, head_dim] projection.
  Tensor fused = Tensor::normal({2, 8, 16}, 51, 0, 0.0, 1.0, DType::kF32);
  fused.narrow(1, 0, 4).copy_from(t.q);
  ops::DecodeAttentionOptions options;
  options.out = Tensor::zeros({2, 4, 16}, DType::kF32);
  Tensor have = ops::decode_attention(fused.narrow(1, 0, 4), t.key_pool, t.value_pool, t.block_table, t.seq_lens,
                                      c.softmax_scale(), options);
  EXPECT_EQ(have.data_ptr(), options.out.data_ptr());
  EXPECT_EQ(max_abs_diff(have, want), 0.0);
}

TEST(DecodeAttention, NegativeAndLargeScales) {
  DecodeCase c{{1, 17, 100}, 6, 2, 16, 32};
  c.scale = -0.7;
  expect_matches_reference(c, DType::kF64, 1e-10, 60);
  c.scale = 8.0;  // sharp softmax: one key dominates
  expect_matches_reference(c, DType::kF64, 1e-10, 70);
}

TEST(DecodeAttention, EmptyBatch) {
  DecodeTensors t = random_decode_inputs({{5}, 4, 2, 8, 16}, DType::kF32, 80);
  Tensor out = ops::decode_attention(t.q.narrow(0, 0, 0), t.key_pool, t.value_pool, t.block_table.narrow(0, 0, 0),
                                     t.seq_lens.narrow(0, 0, 0), 0.5);
  EXPECT_EQ(out.shape(), (Shape{0, 4, 8}));
}

TEST(DecodeAttention, SplitHelpersOnTheCpu) {
  DecodeTensors t = random_decode_inputs({{5, 6}, 4, 2, 8, 16}, DType::kF32, 90);
  EXPECT_EQ(ops::decode_attention_num_splits(t.q, t.key_pool, t.block_table), 1);
  EXPECT_EQ(ops::decode_attention_workspace_bytes(t.q, 1), 0u);
  EXPECT_EQ(ops::decode_attention_workspace_bytes(t.q, 3), std::size_t{2 * 4 * 3 * (8 + 1) * 4});
}

TEST(DecodeAttention, GpuSplitCountDependsOnSizesOnly) {
  // The host-side choice of the CUDA path for an H200's 132 multiprocessors: every block in
  // one wave of 3 per multiprocessor (396), no split under 128 tokens of capacity, at most 128.
  cuda::DecodeAttentionDims dims;
  dims.num_heads = 28;
  dims.num_kv_heads = 4;
  dims.head_dim = 128;
  dims.block_size = 16;
  auto splits = [&](int batch, int max_blocks, int multiprocessors = 132) {
    dims.batch = batch;
    dims.max_blocks_per_seq = max_blocks;
    return cuda::decode_attention_num_splits(dims, multiprocessors);
  };
  EXPECT_EQ(splits(1, 512), 64);          // capacity 8192: 64 splits of 128 tokens (99 would fit)
  EXPECT_EQ(splits(32, 512), 3);          // 128 blocks without splitting: 384 with 3
  EXPECT_EQ(splits(64, 512), 1);          // 256 blocks: a second split would start a second wave
  EXPECT_EQ(splits(1, 16), 2);            // capacity 256
  EXPECT_EQ(splits(1, 7), 1);             // capacity 112: one split
  EXPECT_EQ(splits(1, 65536, 200), 128);  // the cap
  EXPECT_EQ(splits(200, 512), 1);         // the batch alone fills the device
  dims.num_heads = 40;                    // groups of 20 heads: two blocks per kv head
  dims.num_kv_heads = 2;
  EXPECT_EQ(splits(8, 512), 12);  // 32 blocks before splitting
  dims.num_heads = 32;            // groups of 16: one block per kv head
  EXPECT_EQ(splits(8, 512), 24);
  EXPECT_EQ(cuda::decode_attention_workspace_bytes(dims, 1), 0u);
  EXPECT_EQ(cuda::decode_attention_workspace_bytes(dims, 24), std::size_t{8 * 32 * 24 * 129 * 4});
}

TEST(DecodeAttentionErrors, NameTheArgumentAndTheFix) {
  const DecodeCase c{{5, 20}, 6, 2, 8, 16};
  DecodeTensors t = random_decode_inputs(c, DType::kF32, 100);
  auto call = [&](const Tensor& q, const Tensor& kp, const Tensor& vp, const Tensor& table, const Tensor& lens) {
    return error_of([&] { ops::decode_attention(q, kp, vp, table, lens, 0.5); });
  };
  expect_mentions(call(t.q, t.key_pool, t.value_pool, t.block_table.to(DType::kI64), t.seq_lens),
                  {"decode_attention", "block_table must be int32, got int64"});
  expect_mentions(call(t.q, t.key_pool, t.value_pool, t.block_table, t.seq_lens.to(DType::kI64)),
                  {"seq_lens must be int32, got int64"});
  Tensor four_kv = Tensor::zeros({4, 16, 4, 8}, DType::kF32);
  expect_mentions(call(t.q, four_kv, four_kv, t.block_table, t.seq_lens),
                  {"q has 6 heads", "key_pool has 4 kv heads", "multiple of num_kv_heads"});
  expect_mentions(call(t.q, t.key_pool, t.value_pool.narrow(3, 0, 4).contiguous(), t.block_table, t.seq_lens),
                  {"key_pool has shape", "value_pool has shape"});
  expect_mentions(call(t.q, t.key_pool.to(DType::kF64), t.value_pool, t.block_table, t.seq_lens),
                  {"key_pool is float64", "cast one"});
  expect_mentions(call(t.q.narrow(2, 0, 4).contiguous(), t.key_pool, t.value_pool, t.block_table, t.seq_lens),
                  {"head_dim"});
  expect_mentions(call(t.q, t.key_pool, t.value_pool, t.block_table.narrow(0, 0, 1), t.seq_lens),
                  {"block_table has shape [1, ", "batch"});
  expect_mentions(call(t.q, t.key_pool.transpose(2, 3), t.value_pool.transpose(2, 3), t.block_table, t.seq_lens),
                  {"head_dim"});
  expect_mentions(
      error_of([&] { ops::decode_attention(t.q, t.key_pool, t.value_pool, t.block_table, t.seq_lens, std::nan("")); }),
      {"softmax_scale", "finite"});
  expect_mentions(
      call(t.q.to(DType::kI32), t.key_pool.to(DType::kI32), t.value_pool.to(DType::kI32), t.block_table, t.seq_lens),
      {"q must be a floating tensor"});
}

TEST(DecodeAttentionErrors, LengthsAndPagesAreChecked) {
  const DecodeCase c{{5, 20}, 4, 2, 8, 16};  // sequence 1 uses 2 pages; the table has 4 columns
  DecodeTensors t = random_decode_inputs(c, DType::kF32, 110);
  auto with_lens = [&](std::vector<double> lens) {
    return error_of([&] {
      ops::decode_attention(t.q, t.key_pool, t.value_pool, t.block_table, Tensor::from_values(lens, {2}, DType::kI32),
                            0.5);
    });
  };
  expect_mentions(with_lens({5, 0}), {"seq_lens[1] is 0", "at least one cached token"});
  expect_mentions(with_lens({-3, 20}), {"seq_lens[0] is -3"});
  expect_mentions(with_lens({5, 70}), {"seq_lens[1] is 70", "4 blocks of 16 tokens (64 tokens)", "more blocks"});
  // Growing sequence 0 past its one page reaches the -1 padding of its table row.
  expect_mentions(with_lens({17, 20}), {"block_table[0][1] is -1", "sequence 0 of length 17 uses its first 2"});
  std::vector<double> table = t.block_table.to_vector();
  table[4] = 99;  // sequence 1's first page
  expect_mentions(error_of([&] {
                    ops::decode_attention(t.q, t.key_pool, t.value_pool,
                                          Tensor::from_values(table, t.block_table.shape(), DType::kI32), t.seq_lens,
                                          0.5);
                  }),
                  {"block_table[1][0] is 99", "the pools have 6 blocks"});
}

TEST(DecodeAttentionErrors, PoolsMustBeContiguousAndOutMustFit) {
  const DecodeCase c{{5}, 4, 2, 8, 16};
  DecodeTensors t = random_decode_inputs(c, DType::kF32, 120);
  Tensor wide = Tensor::zeros({t.key_pool.size(0), 16, 2, 16}, DType::kF32);
  Tensor strided = wide.narrow(3, 0, 8);
  expect_mentions(error_of([&] { ops::decode_attention(t.q, strided, strided, t.block_table, t.seq_lens, 0.5); }),
                  {"key_pool must be contiguous"});
  ops::DecodeAttentionOptions options;
  options.out = Tensor::zeros({1, 4, 4}, DType::kF32);
  expect_mentions(
      error_of([&] { ops::decode_attention(t.q, t.key_pool, t.value_pool, t.block_table, t.seq_lens, 0.5, options); }),
      {"options.out has shape [1, 4, 4]", "q's shape [1, 4, 8]"});
}

// ---- write_kv_slots ----

TEST(WriteKvSlots, ShuffledSlotsLandAndSkippedTokensDoNot) {
  const std::int64_t blocks = 5, block = 4, kv = 2, dim = 8;
  Tensor key_pool = Tensor::zeros({blocks, block, kv, dim}, DType::kF32);
  Tensor value_pool = Tensor::zeros({blocks, block, kv, dim}, DType::kF32);
  Tensor k = Tensor::normal({6, kv, dim}, 1, 0, 0.0, 1.0, DType::kF32);
  Tensor v = Tensor::normal({6, kv, dim}, 2, 0, 0.0, 1.0, DType::kF32);
  const std::vector<double> slots{13, 2, -1, 7, 19, 0};
  ops::write_kv_slots(key_pool, value_pool, k, v, Tensor::from_values(slots, {6}, DType::kI64));
  Tensor key_rows = key_pool.reshape({blocks * block, kv, dim}),
         value_rows = value_pool.reshape({blocks * block, kv, dim});
  std::vector<bool> written(blocks * block, false);
  for (std::int64_t i = 0; i < 6; ++i) {
    if (slots[i] < 0) continue;
    const auto s = static_cast<std::int64_t>(slots[i]);
    written[s] = true;
    EXPECT_EQ(max_abs_diff(key_rows.select(0, s), k.select(0, i)), 0.0) << "token " << i;
    EXPECT_EQ(max_abs_diff(value_rows.select(0, s), v.select(0, i)), 0.0) << "token " << i;
  }
  for (std::int64_t s = 0; s < blocks * block; ++s)
    if (!written[s]) {
      EXPECT_EQ(max_abs_diff(key_rows.select(0, s), Tensor::zeros({kv, dim}, DType::kF32)), 0.0) << "slot " << s;
      EXPECT_EQ(max_abs_diff(value_rows.select(0, s), Tensor::zeros({kv, dim}, DType::kF32)), 0.0) << "slot " << s;
    }
}

TEST(WriteKvSlots, ViewsOfAFusedProjectionThenDecode) {
  // A prefill of three prompts: k and v are head slices of one [tokens, q + k + v heads, dim]
  // projection, written to the pages of a shuffled block table, then read by decode attention.
  const DecodeCase c{{7, 1, 20}, 4, 2, 8, 4};
  DecodeTensors t = random_decode_inputs(c, DType::kF64, 200);
  const std::int64_t total = 28, columns = t.block_table.size(1);
  Tensor qkv = Tensor::normal({total, 8, 8}, 201, 0, 0.0, 1.0, DType::kF64);
  Tensor k = qkv.narrow(1, 4, 2), v = qkv.narrow(1, 6, 2);
  const std::vector<double> table = t.block_table.to_vector();
  std::vector<double> slots;
  for (std::int64_t b = 0; b < c.batch(); ++b)
    for (std::int64_t j = 0; j < c.lengths[b]; ++j)
      slots.push_back(table[b * columns + j / c.block_size] * static_cast<double>(c.block_size) +
                      static_cast<double>(j % c.block_size));
  ops::write_kv_slots(t.key_pool, t.value_pool, k, v, Tensor::from_values(slots, {total}, DType::kI64));
  // The reference: decode's query per sequence against exactly the written rows.
  Tensor reference = packed_reference(c, t);
  std::int64_t start = 0;
  std::vector<double> want;
  for (std::int64_t b = 0; b < c.batch(); ++b) {
    ops::AttentionConfig config{c.softmax_scale(), false};
    Tensor q_row = t.q.narrow(0, b, 1).expand({c.lengths[b], 4, 8}).contiguous();
    Tensor out =
        ops::attention_forward(q_row, k.narrow(0, start, c.lengths[b]).contiguous(),
                               v.narrow(0, start, c.lengths[b]).contiguous(),
                               Tensor::from_values({0.0, static_cast<double>(c.lengths[b])}, {2}, DType::kI32), config)
            .out;
    const std::vector<double> row = out.select(0, 0).contiguous().to_vector();
    want.insert(want.end(), row.begin(), row.end());
    start += c.lengths[b];
  }
  Tensor have = run_decode(c, t);
  EXPECT_LE(max_abs_diff(have, Tensor::from_values(want, have.shape(), DType::kF64)), 1e-12);
  EXPECT_LE(max_abs_diff(have, reference), 1e-12);
}

TEST(WriteKvSlots, Errors) {
  Tensor key_pool = Tensor::zeros({5, 4, 2, 8}, DType::kF32), value_pool = Tensor::zeros({5, 4, 2, 8}, DType::kF32);
  Tensor k = Tensor::zeros({3, 2, 8}, DType::kF32), v = Tensor::zeros({3, 2, 8}, DType::kF32);
  auto call = [&](const Tensor& kk, const Tensor& vv, const Tensor& slots) {
    return error_of([&] { ops::write_kv_slots(key_pool, value_pool, kk, vv, slots); });
  };
  expect_mentions(call(k, v, Tensor::from_values({0, 20, 1}, {3}, DType::kI64)),
                  {"write_kv_slots", "slots[1] is 20", "20 slots (5 blocks of 4 tokens)"});
  expect_mentions(call(k, v, Tensor::from_values({0, 1, 2}, {3}, DType::kI32)), {"slots must be int64, got int32"});
  expect_mentions(call(k, v, Tensor::from_values({0, 1}, {2}, DType::kI64)), {"slots has shape [2]", "tokens"});
  expect_mentions(call(Tensor::zeros({3, 4, 8}, DType::kF32), Tensor::zeros({3, 4, 8}, DType::kF32),
                       Tensor::from_values({0, 1, 2}, {3}, DType::kI64)),
                  {"k has shape [3, 4, 8]", "num_kv_heads"});
  expect_mentions(call(k.to(DType::kF64), v.to(DType::kF64), Tensor::from_values({0, 1, 2}, {3}, DType::kI64)),
                  {"k is float64", "cast one"});
  // Nothing was written by the failed calls: the slot check comes before any copy.
  EXPECT_EQ(max_abs_diff(key_pool, Tensor::zeros({5, 4, 2, 8}, DType::kF32)), 0.0);
}

// The RoPE + cache write of a decode step: q and k rotated in place as rope_forward rotates
// them, the pools as write_kv_slots fills them from the rotated k; a pool check fails before
// anything is rotated.
TEST(WriteKvSlots, RopeThenWriteEqualsTheTwoOps) {
  const ops::RopeConfig rope{ops::RopeStyle::kInterleaved, 1e4, 0.5};
  Tensor fused = testing::random_tensor({4, 6, 8}, 7, DType::kBF16);  // 2 q, 2 k, 2 v heads
  const Tensor original = fused.clone();
  Tensor key_pool = Tensor::zeros({3, 2, 2, 8}, DType::kBF16), value_pool = Tensor::zeros({3, 2, 2, 8}, DType::kBF16);
  const Tensor positions = Tensor::from_values({0, 5, 9, 300}, {4}, DType::kI64);
  const Tensor slots = Tensor::from_values({5, -1, 0, 2}, {4}, DType::kI64);
  ops::rope_and_write_kv_slots(fused.narrow(1, 0, 2), fused.narrow(1, 2, 2), fused.narrow(1, 4, 2), positions, rope,
                               key_pool, value_pool, slots);
  const Tensor k_want = ops::rope_forward(original.narrow(1, 2, 2), positions, rope);
  EXPECT_EQ(fused.narrow(1, 0, 2).to_vector(),
            ops::rope_forward(original.narrow(1, 0, 2), positions, rope).to_vector());
  EXPECT_EQ(fused.narrow(1, 2, 2).to_vector(), k_want.to_vector());
  Tensor key_want = Tensor::zeros({3, 2, 2, 8}, DType::kBF16), value_want = Tensor::zeros({3, 2, 2, 8}, DType::kBF16);
  ops::write_kv_slots(key_want, value_want, k_want, original.narrow(1, 4, 2), slots);
  EXPECT_EQ(key_pool.to_vector(), key_want.to_vector());
  EXPECT_EQ(value_pool.to_vector(), value_want.to_vector());

  Tensor unrotated = original.clone();
  expect_mentions(error_of([&] {
                    ops::rope_and_write_kv_slots(unrotated.narrow(1, 0, 2), unrotated.narrow(1, 2, 2),
                                                 unrotated.narrow(1, 4, 2), positions, rope, key_pool, value_pool,
                                                 Tensor::from_values({0, 1, 2, 9}, {4}, DType::kI64));
                  }),
                  {"write_kv_slots", "slots[3] is 9"});
  EXPECT_EQ(unrotated.to_vector(), original.to_vector()) << "nothing rotated before the failed check";

  Tensor copied_keys = Tensor::zeros({3, 2, 2, 8}, DType::kBF16),
         copied_values = Tensor::zeros({3, 2, 2, 8}, DType::kBF16);
  const ops::ContiguousQkv out = ops::rope_and_write_kv_slots_copied(
      unrotated.narrow(1, 0, 2), unrotated.narrow(1, 2, 2), unrotated.narrow(1, 4, 2), positions, rope, copied_keys,
      copied_values, slots);
  EXPECT_EQ(out.q.to_vector(), fused.narrow(1, 0, 2).to_vector());
  EXPECT_EQ(out.k.to_vector(), k_want.to_vector());
  EXPECT_EQ(out.v.to_vector(), original.narrow(1, 4, 2).to_vector());
  EXPECT_TRUE(out.q.is_contiguous() && out.k.is_contiguous() && out.v.is_contiguous());
  EXPECT_EQ(unrotated.to_vector(), original.to_vector()) << "the copying form leaves its inputs";
  EXPECT_EQ(copied_keys.to_vector(), key_want.to_vector());
  EXPECT_EQ(copied_values.to_vector(), value_want.to_vector());
}

// ---- argmax_rows ----

TEST(ArgmaxRows, FirstOfTiesNegativesAndNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Tensor x = Tensor::from_values({1,    3,    3,    2,    0,     //
                                  -5,   -2,   -2,   -7,   -9,    //
                                  1,    nan,  5,    nan,  9,     //
                                  -inf, -inf, -inf, -inf, -inf,  //
                                  -0.0, 0.0,  -1,   -1,   -1,    //
                                  4,    4,    4,    4,    4.5},
                                 {6, 5}, DType::kF64);
  const std::vector<double> want{1, 1, 1, 0, 0, 4};
  for (DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor out = ops::argmax_rows(x.to(dtype));
    EXPECT_EQ(out.dtype(), DType::kI64);
    EXPECT_EQ(out.to_vector(), want) << dtype_name(dtype);
  }
}

TEST(ArgmaxRows, SixteenBitRoundingMakesTies) {
  // 1.0 and 1.001 are one bfloat16 value: the first column wins in bfloat16, the second in float32.
  Tensor x = Tensor::from_values({1.0, 1.001, 0.5}, {1, 3}, DType::kF64);
  EXPECT_EQ(ops::argmax_rows(x.to(DType::kF32)).to_vector(), std::vector<double>{1});
  EXPECT_EQ(ops::argmax_rows(x.to(DType::kBF16)).to_vector(), std::vector<double>{0});
}

TEST(ArgmaxRows, StridedRowsAndWideRows) {
  Tensor logits = Tensor::normal({3, 4, 1000}, 7, 0, 0.0, 1.0, DType::kF32);
  Tensor last = logits.select(1, 3);  // the last position of each sequence: rows 4000 apart
  const std::vector<double> got = ops::argmax_rows(last).to_vector();
  for (std::int64_t r = 0; r < 3; ++r) {
    const std::vector<double> row = last.select(0, r).contiguous().to_vector();
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < 1000; ++c)
      if (row[c] > row[best]) best = c;
    EXPECT_EQ(got[r], static_cast<double>(best)) << "row " << r;
  }
  EXPECT_EQ(ops::argmax_rows(Tensor::zeros({0, 5}, DType::kF32)).shape(), (Shape{0}));
  EXPECT_EQ(ops::argmax_rows(Tensor::zeros({2, 1}, DType::kF32)).to_vector(), (std::vector<double>{0, 0}));
}

TEST(ArgmaxRows, Errors) {
  expect_mentions(error_of([] { ops::argmax_rows(Tensor::zeros({4}, DType::kF32)); }),
                  {"argmax_rows", "x must have 2 dimensions"});
  expect_mentions(error_of([] {
                    ops::argmax_rows(Tensor::zeros({2, 3}, DType::kI64));
                  }),
                  {"x must be a floating tensor"});
  expect_mentions(error_of([] {
                    ops::argmax_rows(Tensor::zeros({2, 0}, DType::kF32));
                  }),
                  {"x has shape [2, 0]", "at least one column"});
}

}  // namespace
}  // namespace zt
