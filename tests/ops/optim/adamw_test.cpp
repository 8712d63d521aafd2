// AdamW and the multi-tensor L2 norm on the CPU: against a plain float64 loop of the same
// formula, against torch's AdamW on hand-computed numbers, the non-finite skip, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ops/optim/adamw.h"
#include "ops/optim/l2norm.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using Values = std::vector<double>;
using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;

struct State {
  Tensor master, exp_avg, exp_avg_sq;
};

State fresh_state(const Shape& shape, std::uint64_t seed) {
  return {random_tensor(shape, seed, DType::kF32), Tensor::zeros(shape, DType::kF32),
          Tensor::zeros(shape, DType::kF32)};
}

// The formula of ops/optim/adamw.h, one element at a time in float64.
void reference_step(Values& p, Values& m, Values& v, const Values& grad, const ops::AdamWConfig& c) {
  const ops::AdamWHyperparameters& h = c.hyperparameters;
  double bc1 = 1 - std::pow(h.beta1, c.step), bc2 = 1 - std::pow(h.beta2, c.step);
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = grad[i] / c.grad_scale;
    p[i] -= c.lr * h.weight_decay * p[i];
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
    p[i] -= c.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + h.eps);
  }
}

void expect_close(const Tensor& actual, const Values& expected, double tol, const std::string& what) {
  Values a = actual.to_vector();
  ASSERT_EQ(a.size(), expected.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], expected[i], tol * std::max(1.0, std::abs(expected[i]))) << what << " element " << i;
}

// ---- AdamW ----

TEST(AdamW, MatchesTorchOnHandNumbers) {
  // torch.optim.AdamW(lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01), p = 1, g = 0.5:
  // p = 1 * (1 - 0.001) = 0.999; m = 0.05; v = 0.00025; step 1: bias corrections 0.1 and 0.001,
  // so p = 0.999 - (0.1 / 0.1) * 0.05 / (sqrt(0.00025) / sqrt(0.001) + 1e-8) = 0.899000002.
  State s{Tensor::ones({1}, DType::kF32), Tensor::zeros({1}, DType::kF32), Tensor::zeros({1}, DType::kF32)};
  ops::AdamWConfig c{0.1, 0.9, 0.999, 1e-8, 0.01, 1, 1.0};
  Tensor found = ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, Tensor::full({1}, 0.5, DType::kF32), c);
  EXPECT_FALSE(found.item());
  EXPECT_NEAR(s.master.item(), 0.899000002, 1e-7);
  EXPECT_NEAR(s.exp_avg.item(), 0.05, 1e-8);
  EXPECT_NEAR(s.exp_avg_sq.item(), 0.00025, 1e-10);
  // Step 2 with g = -0.25: p = 0.899000002 * 0.999; m = 0.045 - 0.025 = 0.02;
  // v = 0.00024975 + 0.0000625 = 0.00031225; bias corrections 0.19 and 0.001999.
  c.step = 2;
  ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, Tensor::full({1}, -0.25, DType::kF32), c);
  double p = 0.899000002 * 0.999 - 0.1 / 0.19 * 0.02 / (std::sqrt(0.00031225) / std::sqrt(0.001999) + 1e-8);
  EXPECT_NEAR(s.master.item(), p, 1e-6);
  EXPECT_NEAR(s.exp_avg.item(), 0.02, 1e-8);
}

TEST(AdamW, MatchesAFloat64LoopOverSeveralSteps) {
  for (DType grad_dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    Shape shape{37, 3};
    State s = fresh_state(shape, 1);
    Values p = s.master.to_vector(), m(111, 0.0), v(111, 0.0);
    ops::AdamWConfig c{3e-3, 0.9, 0.95, 1e-6, 0.1, 1, 4.0};
    for (std::int64_t step = 1; step <= 6; ++step) {
      c.step = step;
      Tensor grad = Tensor::normal(shape, 100 + step, 0, 0.0, 4.0, grad_dtype);
      ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, grad, c);
      reference_step(p, m, v, grad.to_vector(), c);
    }
    std::string what = std::string("grad ") + dtype_name(grad_dtype);
    expect_close(s.master, p, 2e-6, what + " master");
    expect_close(s.exp_avg, m, 2e-6, what + " exp_avg");
    expect_close(s.exp_avg_sq, v, 2e-6, what + " exp_avg_sq");
  }
}

TEST(AdamW, WritesTheRoundedWorkingCopy) {
  State s = fresh_state({50}, 2);
  Tensor working = Tensor::zeros({50}, DType::kBF16);
  ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, random_tensor({50}, 3, DType::kBF16), {}, working);
  EXPECT_EQ(working.to_vector(), s.master.to(DType::kBF16).to_vector());
}

TEST(AdamW, GradScaleDividesTheGradient) {
  State a = fresh_state({20}, 4), b = fresh_state({20}, 4);
  Tensor grad = random_tensor({20}, 5, DType::kF32);
  ops::AdamWConfig c{1e-2, 0.9, 0.999, 1e-8, 0.0, 1, 1.0};
  ops::adamw_step(a.master, a.exp_avg, a.exp_avg_sq, grad, c);
  c.grad_scale = 1024.0;  // a power of two: the scaled gradient divides back exactly
  Tensor scaled = Tensor::from_values(
      [&] {
        Values g = grad.to_vector();
        for (double& x : g) x *= 1024.0;
        return g;
      }(),
      {20}, DType::kF32);
  ops::adamw_step(b.master, b.exp_avg, b.exp_avg_sq, scaled, c);
  EXPECT_EQ(a.master.to_vector(), b.master.to_vector());
}

TEST(AdamW, NonFiniteGradientChangesNothing) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    State s = fresh_state({9}, 6);
    s.exp_avg.copy_from(random_tensor({9}, 7, DType::kF32));
    Tensor working = Tensor::full({9}, 3.0, DType::kF16);
    Values before_p = s.master.to_vector(), before_m = s.exp_avg.to_vector();
    Values g = random_tensor({9}, 8, DType::kF32).to_vector();
    g[4] = bad;
    Tensor found =
        ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, Tensor::from_values(g, {9}, DType::kF16), {}, working);
    EXPECT_EQ(found.dtype(), DType::kBool);
    EXPECT_TRUE(found.item());
    EXPECT_EQ(s.master.to_vector(), before_p);
    EXPECT_EQ(s.exp_avg.to_vector(), before_m);
    EXPECT_EQ(s.exp_avg_sq.to_vector(), Values(9, 0.0));
    EXPECT_EQ(working.to_vector(), Values(9, 3.0));
  }
}

// A caller that has seen every gradient finite (the trainer, from their norm) spares the
// check: a non-finite gradient then goes through, which shows that no pass looked for it.
TEST(AdamW, GradientsKnownFiniteSkipTheCheck) {
  State s = fresh_state({9}, 6);
  Values g = random_tensor({9}, 8, DType::kF32).to_vector();
  g[4] = std::numeric_limits<double>::quiet_NaN();
  ops::AdamWConfig config;
  config.gradients_known_finite = true;
  Tensor found = ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, Tensor::from_values(g, {9}, DType::kF32), config);
  EXPECT_FALSE(found.item());
  EXPECT_TRUE(std::isnan(s.master.to_vector()[4]));
  EXPECT_FALSE(std::isnan(s.master.to_vector()[3]));
}

TEST(AdamW, BadArgumentsNameShapesAndDtypes) {
  State s = fresh_state({4, 2}, 9);
  Tensor grad = random_tensor({4, 2}, 10, DType::kF32);
  expect_mentions(
      error_of([&] { ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, random_tensor({8}, 10, DType::kF32), {}); }),
      {"[8]", "[4, 2]"});
  expect_mentions(error_of([&] { ops::adamw_step(s.master.to(DType::kBF16), s.exp_avg, s.exp_avg_sq, grad, {}); }),
                  {"master", "bfloat16"});
  expect_mentions(error_of([&] { ops::adamw_step(s.master, s.exp_avg.transpose(0, 1), s.exp_avg_sq, grad, {}); }),
                  {"exp_avg", "contiguous"});
  expect_mentions(error_of([&] { ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, grad.to(DType::kF64), {}); }),
                  {"grad", "float64"});
  ops::AdamWConfig zero_step;
  zero_step.step = 0;
  expect_mentions(error_of([&] { ops::adamw_step(s.master, s.exp_avg, s.exp_avg_sq, grad, zero_step); }), {"step"});
}

// ---- L2 norm ----

TEST(L2Norm, HandComputedValues) {
  EXPECT_EQ(ops::l2_norm({Tensor::from_values({3, 4}, {2}, DType::kF32)}).item(), 5.0);
  Tensor a = Tensor::from_values({3}, {1}, DType::kBF16), b = Tensor::from_values({4, 0, 12}, {3}, DType::kF32);
  Tensor norm = ops::l2_norm({a, b});
  EXPECT_EQ(norm.shape(), Shape{});
  EXPECT_EQ(norm.dtype(), DType::kF32);
  EXPECT_EQ(norm.item(), 13.0);
  EXPECT_EQ(ops::l2_norm({}).item(), 0.0);
  EXPECT_EQ(ops::l2_norm({Tensor::from_values({1, 2}, {2}, DType::kF64)}).dtype(), DType::kF64);
}

TEST(L2Norm, MatchesAFloat64LoopOverManyTensors) {
  std::vector<Tensor> tensors{random_tensor({1000}, 11, DType::kF32), random_tensor({7, 13}, 12, DType::kBF16),
                              random_tensor({1}, 13, DType::kF16),
                              random_tensor({30, 3}, 14, DType::kF32).transpose(0, 1), Tensor::zeros({0}, DType::kF32)};
  double sum = 0;
  for (const Tensor& t : tensors)
    for (double x : t.to_vector()) sum += x * x;
  EXPECT_NEAR(ops::l2_norm(tensors).item(), std::sqrt(sum), 1e-6 * std::sqrt(sum));
}

TEST(L2Norm, NonFiniteElementsGiveANonFiniteNorm) {
  Values v{1, std::numeric_limits<double>::infinity()};
  EXPECT_TRUE(std::isinf(ops::l2_norm({Tensor::from_values(v, {2}, DType::kF32)}).item()));
  v[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(ops::l2_norm({Tensor::from_values(v, {2}, DType::kF32)}).item()));
}

TEST(L2Norm, RejectsIntegerTensors) {
  expect_mentions(error_of([&] {
                    ops::l2_norm({random_tensor({2}, 15, DType::kF32), Tensor::arange(3)});
                  }),
                  {"tensors[1]", "int64"});
}

}  // namespace
}  // namespace zt
