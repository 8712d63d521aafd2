// The CPU Adam of optimizer offload against ops::adamw_step_multi's CPU reference, bit for
// bit: every instruction set this CPU has (and plain C++ forced), each working dtype, sizes
// that leave vector tails and split unevenly across threads, per-parameter weight decay, and
// the skip on inf/NaN. Also the worker pool under it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <limits>

#include "ops/optim/cpu_adam.h"
#include "tests/common/op_test_util.h"

namespace zt::ops {
namespace {

struct Param {
  Tensor master, exp_avg, exp_avg_sq, grad, working;
  std::optional<double> weight_decay;
};

// Master values over many magnitudes, so the 16-bit copies meet subnormals, ties and
// overflow; moments as after a few steps.
Param random_param(std::int64_t n, std::uint64_t seed, std::optional<DType> working) {
  Param p;
  p.master = testing::random_tensor({n}, seed, DType::kF32);
  float* master = p.master.data<float>();
  for (std::int64_t i = 0; i < n; ++i) master[i] *= std::pow(10.0f, static_cast<float>(i % 15) - 9.0f);
  p.exp_avg = testing::random_tensor({n}, seed + 1, DType::kF32);
  p.exp_avg_sq = testing::random_tensor({n}, seed + 2, DType::kF32, 2.0);
  float* v = p.exp_avg_sq.data<float>();
  for (std::int64_t i = 0; i < n; ++i) v[i] = std::abs(v[i]);
  p.grad = testing::random_tensor({n}, seed + 3, DType::kF32);
  if (working) p.working = Tensor::zeros({n}, *working);
  p.weight_decay = seed % 2 == 0 ? std::optional<double>(0.0) : std::nullopt;
  return p;
}

Param clone(const Param& p) {
  return {p.master.clone(),
          p.exp_avg.clone(),
          p.exp_avg_sq.clone(),
          p.grad.clone(),
          p.working.defined() ? p.working.clone() : Tensor(),
          p.weight_decay};
}

std::vector<CpuAdamSpan> spans_of(std::vector<Param>& params) {
  std::vector<CpuAdamSpan> spans;
  for (Param& p : params) {
    spans.push_back({p.master.data<float>(), p.exp_avg.data<float>(), p.exp_avg_sq.data<float>(), p.grad.data<float>(),
                     p.working.defined() ? p.working.data_ptr() : nullptr,
                     p.working.defined() ? p.working.dtype() : DType::kF32, p.master.numel(), p.weight_decay});
  }
  return spans;
}

std::vector<AdamWParam> reference_params(const std::vector<Param>& params) {
  std::vector<AdamWParam> out;
  for (const Param& p : params) out.push_back({p.master, p.exp_avg, p.exp_avg_sq, p.grad, p.working, p.weight_decay});
  return out;
}

void expect_same_bits(const Tensor& actual, const Tensor& expected, const std::string& what) {
  if (!expected.defined()) return;
  ASSERT_EQ(actual.nbytes(), expected.nbytes()) << what;
  const auto* a = static_cast<const unsigned char*>(actual.data_ptr());
  const auto* e = static_cast<const unsigned char*>(expected.data_ptr());
  const std::size_t element = dtype_size(actual.dtype());
  for (std::size_t i = 0; i < actual.nbytes(); i += element)
    ASSERT_EQ(std::memcmp(a + i, e + i, element), 0)
        << what << " element " << i / element << ": " << actual.narrow(0, i / element, 1).item() << " vs "
        << expected.narrow(0, i / element, 1).item();
}

void expect_same_params(const std::vector<Param>& actual, const std::vector<Param>& expected, const std::string& what) {
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const std::string name = what + " param " + std::to_string(i);
    expect_same_bits(actual[i].master, expected[i].master, name + " master");
    expect_same_bits(actual[i].exp_avg, expected[i].exp_avg, name + " exp_avg");
    expect_same_bits(actual[i].exp_avg_sq, expected[i].exp_avg_sq, name + " exp_avg_sq");
    expect_same_bits(actual[i].working, expected[i].working, name + " working");
  }
}

AdamWConfig config(std::int64_t step) {
  return {.lr = 3e-2,
          .hyperparameters = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1},
          .step = step,
          .grad_scale = 4.0};
}

using Case = std::tuple<CpuAdamIsa, std::optional<DType>>;

class CpuAdamMatchesReference : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!cpu_supports(std::get<0>(GetParam())))
      GTEST_SKIP() << "this CPU has no " << cpu_adam_isa_name(std::get<0>(GetParam()));
  }

  // Three steps on both sides from the same start; every bit must agree.
  void check(const std::vector<std::int64_t>& sizes, int threads) {
    const auto [isa, working] = GetParam();
    std::vector<Param> expected, actual;
    for (std::size_t i = 0; i < sizes.size(); ++i) expected.push_back(random_param(sizes[i], 10 * i + 1, working));
    for (const Param& p : expected) actual.push_back(clone(p));
    CpuAdam adam(threads, isa);
    for (std::int64_t step = 1; step <= 3; ++step) {
      ASSERT_FALSE(adamw_step_multi(reference_params(expected), config(step)).item());
      ASSERT_FALSE(adam.step(spans_of(actual), config(step)));
    }
    expect_same_params(actual, expected, cpu_adam_isa_name(isa));
  }
};

TEST_P(CpuAdamMatchesReference, AwkwardSizes) {
  for (std::int64_t n : {1, 7, 1000, 4097}) check({n}, 2);
}

TEST_P(CpuAdamMatchesReference, ManyTensorsSplitAcrossThreads) {
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < 40; ++i) sizes.push_back((i * 7919) % 3001);  // zero-sized ones too
  sizes.push_back(70001);                                           // enough for every thread to get a share
  check(sizes, 3);
}

TEST_P(CpuAdamMatchesReference, SkipsOnInfOrNanAndModifiesNothing) {
  const auto [isa, working] = GetParam();
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<Param> params;
    for (std::int64_t n : {4097, 90000}) params.push_back(random_param(n, static_cast<std::uint64_t>(n), working));
    params.back().grad.data<float>()[89995] = -bad;  // in the vector tail of the last thread's share
    std::vector<Param> before;
    for (const Param& p : params) before.push_back(clone(p));
    CpuAdam adam(2, isa);
    EXPECT_TRUE(adam.step(spans_of(params), config(1)));
    expect_same_params(params, before, "after a skipped step");
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [isa, working] = info.param;
  return std::string(cpu_adam_isa_name(isa)) + "_" + (working ? dtype_name(*working) : "no_working");
}

INSTANTIATE_TEST_SUITE_P(IsasAndWorkingDtypes, CpuAdamMatchesReference,
                         ::testing::Combine(::testing::Values(CpuAdamIsa::kScalar, CpuAdamIsa::kAvx2,
                                                              CpuAdamIsa::kAvx512),
                                            ::testing::Values(std::nullopt, std::optional(DType::kF32),
                                                              std::optional(DType::kBF16), std::optional(DType::kF16))),
                         case_name);

TEST(CpuAdam, RefusesBadArguments) {
  Param p = random_param(8, 1, DType::kF32);
  std::vector<Param> params{p};
  CpuAdam adam(1, CpuAdamIsa::kScalar);
  AdamWConfig bad_step = config(0);
  testing::expect_mentions(testing::error_of([&] { adam.step(spans_of(params), bad_step); }), {"step", "from 1"});
  std::vector<CpuAdamSpan> spans = spans_of(params);
  spans[0].working_dtype = DType::kI32;
  testing::expect_mentions(testing::error_of([&] { adam.step(spans, config(1)); }), {"spans[0]", "int32"});
}

// The CPU Adam's threads are the cores given to the rank: the process's cores shared by the
// node's ranks, unless the launcher bound the process to cores of its own.
TEST(CpuAdam, ThreadsAreTheCoresGivenToTheRank) {
  EXPECT_EQ(cores_per_rank(16, 16, 1), 16);
  EXPECT_EQ(cores_per_rank(16, 16, 8), 2);
  EXPECT_EQ(cores_per_rank(16, 16, 5), 3);
  EXPECT_EQ(cores_per_rank(16, 16, 32), 1) << "never fewer than one";
  EXPECT_EQ(cores_per_rank(4, 16, 8), 4) << "bound to four cores: they are the rank's";
  EXPECT_EQ(cores_per_rank(1, 16, 8), 1);
}

TEST(WorkerPool, RunsEveryIndexOnceEachTime) {
  WorkerPool pool(4);
  std::vector<std::atomic<int>> counts(4);
  for (int round = 0; round < 200; ++round) pool.run([&](int i) { ++counts[i]; });
  for (auto& count : counts) EXPECT_EQ(count.load(), 200);
}

}  // namespace
}  // namespace zt::ops
