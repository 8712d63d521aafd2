// small_m_linear on the CPU: equal, bit for bit, to the ops it stands for composed by hand
// (rmsnorm_forward / swiglu_forward, linear_forward, the residual add) for every prologue and
// epilogue and every float dtype; hand-computed values, the linear result rounded before the
// residual add, and the errors for bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/elementwise/elementwise.h"
#include "ops/gemm/linear.h"
#include "ops/gemv/gemv.h"
#include "ops/norm/rmsnorm.h"
#include "ops/swiglu/swiglu.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using ops::SmallMLinearOptions;
using ops::SmallMPrologue;
using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;

enum class Variant { kPlain, kRmsNormQwen, kRmsNormGlm, kSwigluSplit, kSwigluFused };
const Variant kVariants[] = {Variant::kPlain, Variant::kRmsNormQwen, Variant::kRmsNormGlm, Variant::kSwigluSplit,
                             Variant::kSwigluFused};

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kPlain:
      return "plain";
    case Variant::kRmsNormQwen:
      return "rmsnorm qwen";
    case Variant::kRmsNormGlm:
      return "rmsnorm glm";
    case Variant::kSwigluSplit:
      return "swiglu split";
    default:
      return "swiglu fused";
  }
}

struct Case {
  Tensor x, weight;
  SmallMLinearOptions options;
};

// x [2, 3, ...] (6 rows) with in features, out features; bias and residual when asked.
Case make_case(Variant v, DType dtype, std::int64_t in, std::int64_t out, bool bias, bool residual,
               std::uint64_t seed) {
  Case c;
  c.weight = random_tensor({out, in}, seed, dtype);
  c.x = random_tensor({2, 3, v == Variant::kSwigluFused ? 2 * in : in}, seed + 1, dtype);
  if (v == Variant::kRmsNormQwen || v == Variant::kRmsNormGlm) {
    c.options.prologue = SmallMPrologue::kRmsNorm;
    c.options.norm_weight = random_tensor({in}, seed + 2, dtype, 1.0, 0.5);
    c.options.eps = 1e-5f;
    c.options.norm_style = v == Variant::kRmsNormQwen ? ops::RmsNormStyle::kQwen : ops::RmsNormStyle::kGlm;
  }
  if (v == Variant::kSwigluSplit || v == Variant::kSwigluFused) c.options.prologue = SmallMPrologue::kSwiglu;
  if (v == Variant::kSwigluSplit) c.options.up = random_tensor({2, 3, in}, seed + 3, dtype);
  if (bias) c.options.bias = random_tensor({out}, seed + 4, dtype);
  if (residual) c.options.residual = random_tensor({2, 3, out}, seed + 5, dtype);
  return c;
}

// The ops a decode layer runs today, one after another.
Tensor by_hand(Variant v, const Case& c) {
  Tensor input = c.x;
  if (v == Variant::kRmsNormQwen || v == Variant::kRmsNormGlm)
    input = ops::rmsnorm_forward(c.x, c.options.norm_weight, c.options.eps, c.options.norm_style).y;
  if (v == Variant::kSwigluSplit) input = ops::swiglu_forward(c.x, c.options.up);
  if (v == Variant::kSwigluFused) input = ops::swiglu_fused_forward(c.x);
  Tensor y = ops::linear_forward(input, c.weight, c.options.bias);
  return c.options.residual.defined() ? ops::add_forward(c.options.residual, y) : y;
}

TEST(SmallMLinear, EqualsTheComposedOpsForEveryPrologueEpilogueAndDtype) {
  std::uint64_t seed = 10;
  for (DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16})
    for (Variant v : kVariants)
      for (bool bias : {false, true})
        for (bool residual : {false, true}) {
          std::string what = std::string(dtype_name(dtype)) + " " + variant_name(v) + (bias ? " bias" : "") +
                             (residual ? " residual" : "");
          Case c = make_case(v, dtype, 24, 10, bias, residual, seed += 10);
          Tensor y = ops::small_m_linear(c.x, c.weight, c.options);
          EXPECT_EQ(y.shape(), (Shape{2, 3, 10})) << what;
          EXPECT_EQ(y.dtype(), dtype) << what;
          EXPECT_EQ(y.to_vector(), by_hand(v, c).to_vector()) << what;
        }
}

TEST(SmallMLinear, HandComputedValues) {
  Tensor x = Tensor::from_values({1, 2}, {1, 2}, DType::kF32);
  Tensor w = Tensor::from_values({1, 0, 0, 1, 1, 1}, {3, 2}, DType::kF32);
  EXPECT_EQ(ops::small_m_linear(x, w).to_vector(), (std::vector<double>{1, 2, 3}));
  SmallMLinearOptions o;
  o.bias = Tensor::from_values({0.5, -1, 2}, {3}, DType::kF32);
  EXPECT_EQ(ops::small_m_linear(x, w, o).to_vector(), (std::vector<double>{1.5, 1, 5}));
  o.residual = Tensor::from_values({10, 20, 30}, {1, 3}, DType::kF32);
  EXPECT_EQ(ops::small_m_linear(x, w, o).to_vector(), (std::vector<double>{11.5, 21, 35}));
  // RMSNorm of [3, 4] with eps 0: rms = sqrt(12.5); weight [1, 2].
  SmallMLinearOptions norm;
  norm.prologue = SmallMPrologue::kRmsNorm;
  norm.norm_weight = Tensor::from_values({1, 2}, {2}, DType::kF32);
  norm.eps = 0.0f;
  std::vector<double> y = ops::small_m_linear(Tensor::from_values({3, 4}, {1, 2}, DType::kF32), w, norm).to_vector();
  const double r = 1 / std::sqrt(12.5);
  EXPECT_NEAR(y[0], 3 * r, 1e-6);
  EXPECT_NEAR(y[1], 8 * r, 1e-6);
  EXPECT_NEAR(y[2], 11 * r, 1e-6);
}

// bfloat16: 1 · (1 + 2⁻⁷) + 2⁻⁸ lies halfway between 1 + 2⁻⁷ and 1 + 2⁻⁶ and rounds to the
// even 1 + 2⁻⁶; adding the residual -1 afterwards gives 2⁻⁶, where the unrounded sum would
// give 1.5 · 2⁻⁷. torch's `residual + linear(x)` rounds the linear result first.
TEST(SmallMLinear, TheLinearResultIsRoundedBeforeTheResidualAdd) {
  Tensor x = Tensor::from_values({1}, {1, 1}, DType::kBF16);
  Tensor w = Tensor::from_values({1.0078125}, {1, 1}, DType::kBF16);
  SmallMLinearOptions o;
  o.bias = Tensor::from_values({0.00390625}, {1}, DType::kBF16);
  o.residual = Tensor::from_values({-1}, {1, 1}, DType::kBF16);
  EXPECT_EQ(ops::small_m_linear(x, w, o).to_vector(), (std::vector<double>{0.015625}));
}

TEST(SmallMLinear, KeepsLeadingDimsAndTakesNoRows) {
  Tensor w = random_tensor({5, 4}, 1, DType::kF32);
  EXPECT_EQ(ops::small_m_linear(random_tensor({2, 1, 4}, 2, DType::kF32), w).shape(), (Shape{2, 1, 5}));
  EXPECT_EQ(ops::small_m_linear(random_tensor({4}, 3, DType::kF32), w).shape(), (Shape{5}));
  EXPECT_EQ(ops::small_m_linear(random_tensor({0, 4}, 4, DType::kF32), w).shape(), (Shape{0, 5}));
  Tensor x32 = random_tensor({32, 4}, 5, DType::kF32);
  EXPECT_EQ(ops::small_m_linear(x32, w).to_vector(), ops::linear_forward(x32, w).to_vector());
}

TEST(SmallMLinear, BadArgumentsSayWhatIsWrong) {
  const DType f32 = DType::kF32;
  Tensor w = random_tensor({5, 4}, 1, f32), x = random_tensor({3, 4}, 2, f32);
  expect_mentions(error_of([&] {
                    ops::small_m_linear(random_tensor({3, 6}, 3, f32), w);
                  }),
                  {"small_m_linear", "[3, 6]", "[5, 4]", "in_features"});
  SmallMLinearOptions fused;
  fused.prologue = SmallMPrologue::kSwiglu;
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, fused); }), {"small_m_linear", "8", "[gate | up]"});
  expect_mentions(error_of([&] {
                    ops::small_m_linear(random_tensor({33, 4}, 4, f32), w);
                  }),
                  {"33 rows", "at most 32", "linear_forward"});
  expect_mentions(error_of([&] {
                    ops::small_m_linear(x, random_tensor({5, 4}, 5, DType::kBF16));
                  }),
                  {"weight", "bfloat16", "float32"});
  expect_mentions(error_of([&] { ops::small_m_linear(x.to(DType::kI32), w.to(DType::kI32)); }), {"x", "floating"});
  expect_mentions(error_of([&] { ops::small_m_linear(x, random_tensor({20}, 6, f32)); }), {"weight", "2 dimensions"});

  SmallMLinearOptions norm;
  norm.prologue = SmallMPrologue::kRmsNorm;
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, norm); }), {"rmsnorm", "needs norm_weight"});
  norm.norm_weight = random_tensor({5}, 7, f32);
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, norm); }), {"norm_weight", "[5]", "in_features"});
  SmallMLinearOptions stray;
  stray.norm_weight = random_tensor({4}, 8, f32);
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, stray); }), {"norm_weight", "not rmsnorm"});
  stray = {};
  stray.up = x;
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, stray); }), {"up", "not swiglu"});
  SmallMLinearOptions split;
  split.prologue = SmallMPrologue::kSwiglu;
  split.up = random_tensor({2, 4}, 9, f32);
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, split); }), {"up", "[2, 4]", "[3, 4]"});

  SmallMLinearOptions bias;
  bias.bias = random_tensor({4}, 10, f32);
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, bias); }), {"bias", "out_features"});
  SmallMLinearOptions residual;
  residual.residual = random_tensor({3, 4}, 11, f32);
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, residual); }), {"residual", "[3, 4]", "[3, 5]"});
  residual.residual = random_tensor({3, 5}, 12, DType::kF64);
  expect_mentions(error_of([&] { ops::small_m_linear(x, w, residual); }), {"residual", "float64"});
}

}  // namespace
}  // namespace zt
