// The sampling kernel against the CPU reference on the same rows: vocabularies 151936 (Qwen),
// 65024 (ChatGLM), 1000 and 7; float32, bfloat16 and float16 logits (float64 and strided rows
// too); batches of 1 to 32 rows mixing greedy and sampled rows, top-k, top-p, tiny
// temperatures, penalties and barred eos, over rows spread, with ties, peaked and all equal.
// Every token must be the reference's, and a second run must repeat it. The output starts as
// NaN bytes, so a row the kernel leaves unwritten fails.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ops/sampling/sampling.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

class SamplingGpu : public testing::PoisonedGpuTest {};

template <typename T>
T pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  return *(values.begin() + rng() % values.size());
}

// Rows of logits with their rules; the rules' spans point into seen and barred.
struct Batch {
  std::int64_t vocab = 0;
  std::vector<double> values;
  std::vector<std::vector<std::int64_t>> seen, barred;
  std::vector<ops::RowSampling> rules;
};

enum class Pattern { kSpread, kTies, kPeaked, kEqual, kTiedTop };

std::vector<double> row_values(std::mt19937_64& rng, std::int64_t vocab, Pattern pattern) {
  std::normal_distribution<double> normal(0.0, 3.0);
  const auto tied = static_cast<std::int64_t>(1 + rng() % 9);
  std::vector<double> row(static_cast<std::size_t>(vocab));
  for (std::size_t i = 0; i < row.size(); ++i) {
    double v = normal(rng);
    if (pattern == Pattern::kTies) v = std::round(v);
    if (pattern == Pattern::kPeaked && rng() % 64 == 0) v += 14.0;
    if (pattern == Pattern::kEqual) v = 1.5;
    if (pattern == Pattern::kTiedTop) v = static_cast<std::int64_t>(i) % 101 < tied ? 20.0 : std::round(v);
    row[i] = v;
  }
  return row;
}

ops::RowSampling random_rules(std::mt19937_64& rng, std::int64_t vocab) {
  ops::RowSampling r;
  r.do_sample = rng() % 6 != 0;
  r.temperature = pick(rng, {1.0, 0.7, 1.3, 1e-3});
  r.top_k = pick<std::int64_t>(rng, {0, 0, 1, 20, 50, vocab - 1, vocab + 3});
  r.top_p = pick(rng, {1.0, 0.95, 0.8, 0.5, 0.25, 1e-7});
  r.repetition_penalty = pick(rng, {1.0, 1.05, 1.3, 0.9});
  r.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  r.min_p = pick(rng, {0.0, 0.0, 0.0, 0.05, 0.3, 1.0});
  return r;
}

Batch random_batch(std::mt19937_64& rng, std::int64_t rows, std::int64_t vocab,
                   std::initializer_list<Pattern> patterns) {
  Batch b;
  b.vocab = vocab;
  std::uniform_int_distribution<std::int64_t> id(-1, vocab);  // -1 and vocab lie outside
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<double> row = row_values(rng, vocab, *(patterns.begin() + rng() % patterns.size()));
    b.values.insert(b.values.end(), row.begin(), row.end());
    std::vector<std::int64_t> seen, barred;
    for (int i = 0; i < static_cast<int>(rng() % 300); ++i) seen.push_back(id(rng));
    if (rng() % 3 == 0) barred = {id(rng), id(rng)};
    b.seen.push_back(std::move(seen));
    b.barred.push_back(std::move(barred));
    b.rules.push_back(random_rules(rng, vocab));
  }
  for (std::size_t r = 0; r < b.rules.size(); ++r) b.rules[r].seen = b.seen[r], b.rules[r].barred = b.barred[r];
  return b;
}

std::string describe(const ops::RowSampling& r) {
  std::ostringstream text;
  text << "do_sample " << r.do_sample << " temperature " << r.temperature << " top_k " << r.top_k << " top_p "
       << r.top_p << " penalty " << r.repetition_penalty << " seen " << r.seen.size() << " barred " << r.barred.size()
       << " uniform " << r.uniform;
  return text.str();
}

// Runs the batch on the GPU twice and on the CPU from the same stored values.
void expect_matches_reference(const Batch& b, DType dtype, const std::string& what) {
  const auto rows = static_cast<std::int64_t>(b.rules.size());
  const Tensor cpu = Tensor::from_values(b.values, {rows, b.vocab}, dtype);
  const Tensor gpu = cpu.to(Device::cuda());
  const std::vector<std::int64_t> expected = ops::sample_rows(cpu, b.rules);
  const std::vector<std::int64_t> chosen = ops::sample_rows(gpu, b.rules);
  ASSERT_EQ(chosen.size(), expected.size()) << what;
  for (std::size_t r = 0; r < chosen.size(); ++r)
    EXPECT_EQ(chosen[r], expected[r]) << what << " row " << r << ": " << describe(b.rules[r]);
  EXPECT_EQ(ops::sample_rows(gpu, b.rules), chosen) << what << ": a second run chose differently";
}

TEST_F(SamplingGpu, MatchesTheReferenceAcrossVocabulariesAndDtypes) {
  ZT_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(3);
  const auto patterns = {Pattern::kSpread, Pattern::kTies, Pattern::kPeaked, Pattern::kTiedTop};
  for (std::int64_t vocab : {151936, 65024, 1000, 7})
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
      for (std::int64_t rows : {1, 8, 32}) {
        if (vocab >= 65024 && rows == 8) continue;  // the CPU reference is the slow part
        const std::string what =
            std::string(dtype_name(dtype)) + " vocab " + std::to_string(vocab) + " rows " + std::to_string(rows);
        expect_matches_reference(random_batch(rng, rows, vocab, patterns), dtype, what);
      }
}

TEST_F(SamplingGpu, MatchesOnOddBatchSizes) {
  ZT_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  for (std::int64_t rows = 1; rows <= 32; rows += 3)
    expect_matches_reference(random_batch(rng, rows, 1000, {Pattern::kSpread, Pattern::kTies}), DType::kBF16,
                             "bfloat16 vocab 1000 rows " + std::to_string(rows));
}

// All the mass in one tie group (all equal, or a tied top under a tiny temperature) with a
// round top_p: the reference's float64 cumulative sum lands on 1 - top_p exactly or within a
// rounding, which the kernel's cut inside a tie group replays.
TEST_F(SamplingGpu, CutsTieGroupsAsTheReferenceDoes) {
  ZT_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(9);
  for (std::int64_t vocab : {7, 1000, 151936}) {
    Batch b = random_batch(rng, 24, vocab, {Pattern::kEqual, Pattern::kTiedTop});
    for (ops::RowSampling& r : b.rules) {
      r.do_sample = true;
      r.temperature = pick(rng, {1.0, 1e-3});
      r.top_k = 0;
      r.top_p = pick(rng, {0.5, 0.25, 0.75, 1.0 / 3.0, 0.1});
    }
    expect_matches_reference(b, DType::kF32, "tie groups, vocab " + std::to_string(vocab));
  }
}

TEST_F(SamplingGpu, TakesFloat64AndStridedRows) {
  ZT_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(13);
  const Batch b = random_batch(rng, 6, 4099, {Pattern::kSpread, Pattern::kTies, Pattern::kPeaked});
  expect_matches_reference(b, DType::kF64, "float64 vocab 4099");
  // The last position of [rows, 2, vocab], as a forward returns logits.
  const Tensor both = Tensor::from_values(b.values, {6, 1, 4099}, DType::kF32).expand({6, 2, 4099}).contiguous();
  const Tensor last = both.to(Device::cuda()).select(1, 1);
  ASSERT_FALSE(last.is_contiguous());
  EXPECT_EQ(ops::sample_rows(last, b.rules), ops::sample_rows(both.select(1, 1), b.rules));
}

}  // namespace
}  // namespace zt
