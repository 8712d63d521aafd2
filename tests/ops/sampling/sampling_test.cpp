// ops::sample_rows on the CPU against models::choose_token (with apply_min_new_tokens), row by
// row, over random rows and option combinations: ties, top_k beyond the vocabulary, tiny top_p
// and temperature, penalties with repeated and out-of-range ids, barred eos, every float
// dtype, strided rows. Then the tie behaviour of top-p the device reproduces, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "models/generation/generate_sampling.h"
#include "ops/sampling/logits_processors.h"
#include "ops/sampling/sampling.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::error_of;
using testing::expect_mentions;

constexpr double kInf = std::numeric_limits<double>::infinity();

// One row's options in both spellings: GenerationOptions for choose_token, RowSampling for
// the op (whose spans point into `seen` and `options.eos_token_ids`).
struct Case {
  models::GenerationOptions options;
  std::vector<std::int64_t> seen;
  std::int64_t generated = 0;
  double uniform = 0.0;

  ops::RowSampling rules() const {
    const std::span<const std::int64_t> eos = options.eos_token_ids;
    return models::row_sampling(options, seen, generated < options.min_new_tokens ? eos : eos.first(0), uniform);
  }

  std::int64_t expected(std::vector<double> row) const {
    models::apply_min_new_tokens(row, generated, options);
    return models::choose_token(std::move(row), seen, options, uniform);
  }
};

template <typename T>
T pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  return *(values.begin() + rng() % values.size());
}

Case random_case(std::mt19937_64& rng, std::int64_t vocab) {
  Case c;
  c.options.do_sample = rng() % 5 != 0;
  c.options.temperature = pick(rng, {1.0, 0.7, 1.6, 1e-4});
  c.options.top_k = pick<std::int64_t>(rng, {0, 1, 3, 50, vocab - 1, vocab, vocab + 7});
  c.options.top_p = pick(rng, {1.0, 0.95, 0.8, 0.5, 0.25, 1e-9});
  c.options.min_p = pick(rng, {0.0, 0.0, 0.05, 0.3, 1.0});
  c.options.repetition_penalty = pick(rng, {1.0, 1.0, 1.3, 0.8});
  std::uniform_int_distribution<std::int64_t> id(-2, vocab + 2);  // some outside the row
  for (int i = 0; i < static_cast<int>(rng() % 12); ++i) c.seen.push_back(id(rng));
  if (!c.seen.empty()) c.seen.push_back(c.seen.front());  // a repeat, penalised once
  c.options.eos_token_ids = {id(rng), id(rng)};
  c.options.min_new_tokens = 2;
  c.generated = static_cast<std::int64_t>(rng() % 4);
  c.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  return c;
}

// Row values: spread, with ties (rounded), peaked on a few ids, or all equal.
std::vector<double> random_row(std::mt19937_64& rng, std::int64_t vocab) {
  std::normal_distribution<double> normal(0.0, 2.0);
  const int shape = static_cast<int>(rng() % 4);
  std::vector<double> row(static_cast<std::size_t>(vocab));
  for (double& v : row) {
    v = normal(rng);
    if (shape == 1) v = std::round(v);
    if (shape == 2 && rng() % 16 == 0) v += 12.0;
    if (shape == 3) v = 0.75;
  }
  return row;
}

// Runs the op over `rows` cases of one vocabulary and dtype and compares each with the
// reference on the values the op saw (the row rounded to the dtype).
void expect_rows_match(std::mt19937_64& rng, std::int64_t rows, std::int64_t vocab, DType dtype) {
  std::vector<double> values;
  std::vector<Case> cases;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<double> row = random_row(rng, vocab);
    values.insert(values.end(), row.begin(), row.end());
    cases.push_back(random_case(rng, vocab));
  }
  const Tensor logits = Tensor::from_values(values, {rows, vocab}, dtype);
  std::vector<ops::RowSampling> rules;
  for (const Case& c : cases) rules.push_back(c.rules());
  const std::vector<std::int64_t> chosen = ops::sample_rows(logits, rules);
  ASSERT_EQ(chosen.size(), static_cast<std::size_t>(rows));
  const std::vector<double> stored = logits.to_vector();
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto begin = stored.begin() + r * vocab;
    const Case& c = cases[static_cast<std::size_t>(r)];
    EXPECT_EQ(chosen[static_cast<std::size_t>(r)], c.expected(std::vector<double>(begin, begin + vocab)))
        << dtype_name(dtype) << " vocab " << vocab << " row " << r << ": do_sample " << c.options.do_sample
        << " temperature " << c.options.temperature << " top_k " << c.options.top_k << " top_p " << c.options.top_p
        << " penalty " << c.options.repetition_penalty << " uniform " << c.uniform;
  }
}

TEST(SampleRows, EqualsChooseTokenRowByRow) {
  std::mt19937_64 rng(11);
  for (DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16})
    for (std::int64_t vocab : {1, 2, 7, 64, 1000})
      for (std::int64_t rows : {1, 9, 40}) expect_rows_match(rng, rows, vocab, dtype);
}

TEST(SampleRows, ReadsStridedRows) {
  // The last position of [rows, positions, vocab] logits, as a forward returns them.
  const Tensor all = Tensor::normal({3, 4, 50}, 5, 0, 0.0, 3.0, DType::kF32);
  const Tensor last = all.select(1, 3);
  ASSERT_FALSE(last.is_contiguous());
  std::vector<ops::RowSampling> rules(3);
  for (ops::RowSampling& r : rules) r.do_sample = true, r.top_k = 10, r.top_p = 0.9;
  rules[1].uniform = 0.5, rules[2].uniform = 0.99;
  EXPECT_EQ(ops::sample_rows(last, rules), ops::sample_rows(last.contiguous(), rules));
}

TEST(SampleRows, BarsPenalisesAndKeepsRowsApart) {
  const Tensor logits = Tensor::from_values({3.0, 2.0, 1.0, 3.0, 2.0, 1.0}, {2, 3}, DType::kF32);
  const std::vector<std::int64_t> barred{0}, seen{0, 0, 7};
  std::vector<ops::RowSampling> rules(2);
  rules[0].barred = barred;  // greedy, id 0 barred: 1
  rules[1].seen = seen;      // greedy, id 0 penalised once (3 / 2 < 2): 1
  rules[1].repetition_penalty = 2.0;
  EXPECT_EQ(ops::sample_rows(logits, rules), (std::vector<std::int64_t>{1, 1}));
  rules[1].repetition_penalty = 1.4;  // 3 / 1.4 > 2: still 0
  EXPECT_EQ(ops::sample_rows(logits, rules), (std::vector<std::int64_t>{1, 0}));
  EXPECT_TRUE(ops::sample_rows(Tensor::empty({0, 3}, DType::kF32), {}).empty());
}

TEST(SampleRows, TopPCutsATieGroupByIdAsAStableSortDoes) {
  // Four equal tokens, 0.25 each: ascending cumulative 0.25, 0.5 stay within 1 - 0.5, so the
  // two lowest ids go; the third sum, 0.75, stops it.
  std::vector<double> logits{1.0, 1.0, 1.0, 1.0};
  ops::apply_top_p(logits, 0.5);
  EXPECT_EQ(logits, (std::vector<double>{-kInf, -kInf, 1.0, 1.0}));
  // A tiny top_p keeps only the last of the largest (the most likely, highest id).
  logits = {2.0, 1.0, 2.0, 0.0};
  ops::apply_top_p(logits, 1e-12);
  EXPECT_EQ(logits, (std::vector<double>{-kInf, -kInf, 2.0, -kInf}));
  // first_argmax passes NaNs over unless the row starts with one, as std::max_element.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ops::first_argmax({1.0, nan, 3.0, 3.0}), 2);
  EXPECT_EQ(ops::first_argmax({nan, 1.0, 3.0}), 0);
}

// min_p (vLLM's, llama.cpp's, transformers' MinPLogitsWarper): a token less likely than min_p
// times the most likely one is dropped before the draw, after top-p.
TEST(SampleRows, MinPDropsTokensBelowItsShareOfTheTopProbability) {
  const std::vector<double> p{0.5, 0.3, 0.15, 0.05};
  std::vector<double> logits;
  for (double v : p) logits.push_back(std::log(v));
  std::vector<double> cut = logits;
  ops::apply_min_p(cut, 0.2);  // bound 0.1: the 0.05 goes, the 0.15 stays
  EXPECT_EQ(cut, (std::vector<double>{logits[0], logits[1], logits[2], -kInf}));
  cut = logits;
  ops::apply_min_p(cut, 0.0);  // 0 keeps every token
  EXPECT_EQ(cut, logits);
  cut = logits;
  ops::apply_min_p(cut, 1.0);  // 1 keeps the most likely (and its ties)
  EXPECT_EQ(cut, (std::vector<double>{logits[0], -kInf, -kInf, -kInf}));
  // A draw of 0.99 lands on the last token without min_p (cumulative 0.95 before it); with
  // min_p 0.2 on the third, the last dropped; with 0.4 (bound 0.2) on the second.
  ops::RowSampling row;
  row.do_sample = true, row.uniform = 0.99;
  const Tensor tensor = Tensor::from_values(logits, {1, 4}, DType::kF64);
  EXPECT_EQ(ops::sample_rows(tensor, {row}), (std::vector<std::int64_t>{3}));
  row.min_p = 0.2;
  EXPECT_EQ(ops::sample_rows(tensor, {row}), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(ops::sample_row(logits, row), 2);
  row.min_p = 0.4;
  EXPECT_EQ(ops::sample_rows(tensor, {row}), (std::vector<std::int64_t>{1}));
  // Through the generation options, as generate and serve give it.
  models::GenerationOptions options;
  options.do_sample = true, options.top_k = 0, options.min_p = 0.4;
  EXPECT_EQ(models::choose_token(logits, {}, options, 0.99), 1);
  // Greedy ignores it.
  row.do_sample = false, row.min_p = 1.0;
  EXPECT_EQ(ops::sample_row(logits, row), 0);
}

TEST(SampleRows, RefusesBadInput) {
  const Tensor logits = Tensor::zeros({2, 5}, DType::kF32);
  std::vector<ops::RowSampling> two(2);
  expect_mentions(error_of([&] { ops::sample_rows(logits, {ops::RowSampling{}}); }),
                  {"sample_rows", "[2, 5]", "the rules number 1", "one per row"});
  expect_mentions(error_of([&] { ops::sample_rows(Tensor::zeros({5}, DType::kF32), {ops::RowSampling{}}); }),
                  {"sample_rows", "logits"});
  expect_mentions(error_of([&] {
                    ops::sample_rows(Tensor::zeros({2, 5}, DType::kI64), two);
                  }),
                  {"sample_rows", "floating", "int64"});
  expect_mentions(error_of([&] { ops::sample_rows(Tensor(), two); }), {"sample_rows", "undefined"});
  expect_mentions(error_of([&] {
                    ops::sample_rows(Tensor::zeros({2, 0}, DType::kF32), two);
                  }),
                  {"sample_rows", "[2, 0]", "at least one token"});
  // Row 1 set wrong by `spoil`, row 0 fine.
  auto refused = [&](auto spoil, std::initializer_list<const char*> parts) {
    std::vector<ops::RowSampling> rules(2);
    spoil(rules[1]);
    expect_mentions(error_of([&] { ops::sample_rows(logits, rules); }), parts);
  };
  refused([](ops::RowSampling& r) { r.top_k = -1; }, {"row 1", "top_k -1"});
  refused([](ops::RowSampling& r) { r.top_p = 0.0; }, {"row 1", "top_p 0", "(0, 1]"});
  refused([](ops::RowSampling& r) { r.top_p = 1.5; }, {"row 1", "top_p 1.5"});
  refused([](ops::RowSampling& r) { r.min_p = 1.5; }, {"row 1", "min_p 1.5", "[0, 1]"});
  refused([](ops::RowSampling& r) { r.min_p = -0.1; }, {"row 1", "min_p -0.1"});
  refused([](ops::RowSampling& r) { r.repetition_penalty = 0.0; }, {"row 1", "repetition_penalty 0", "positive"});
  refused([](ops::RowSampling& r) { r.do_sample = true, r.temperature = 0.0; }, {"row 1", "temperature 0"});
  refused([](ops::RowSampling& r) { r.do_sample = true, r.uniform = 1.0; }, {"row 1", "draw 1", "[0, 1)"});
  refused([](ops::RowSampling& r) { r.do_sample = true, r.uniform = std::nan(""); }, {"row 1", "draw nan"});
  // Greedy rows ignore the sampling-only values.
  std::vector<ops::RowSampling> greedy(2);
  greedy[1].temperature = 0.0, greedy[1].uniform = 2.0;
  EXPECT_EQ(ops::sample_rows(logits, greedy), (std::vector<std::int64_t>{0, 0}));
}

}  // namespace
}  // namespace zt
