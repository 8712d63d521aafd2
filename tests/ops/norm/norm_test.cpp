// RMSNorm and RoPE on the CPU: float64 finite-difference gradients for both styles of each,
// hand-computed values, the 16-bit rounding recipes, RoPE's inverse and identity, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/elementwise/elementwise.h"
#include "ops/norm/rmsnorm.h"
#include "ops/rope/rope.h"
#include "runtime/error.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using Values = std::vector<double>;
using ops::RmsNormStyle;
using ops::RopeConfig;
using ops::RopeStyle;
using testing::error_of;
using testing::expect_gradients_match;
using testing::random_tensor;

const char* style_name(RmsNormStyle style) { return style == RmsNormStyle::kQwen ? "qwen" : "glm"; }

// ---- RMSNorm ----

TEST(RmsNorm, HandComputedValues) {
  Tensor x = Tensor::from_values({3, 4, 1, -1}, {2, 2}, DType::kF32);
  Tensor w = Tensor::from_values({1, 2}, {2}, DType::kF32);
  ops::RmsNormOutput out = ops::rmsnorm_forward(x, w, 0.0f, RmsNormStyle::kQwen);
  double r0 = 1 / std::sqrt(12.5);
  Values expected{3 * r0, 8 * r0, 1, -2};
  Values y = out.y.to_vector();
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-6) << i;
  EXPECT_EQ(out.rstd.shape(), (Shape{2}));
  EXPECT_EQ(out.rstd.dtype(), DType::kF32);
  EXPECT_NEAR(out.rstd.to_vector()[0], r0, 1e-7);
  EXPECT_NEAR(out.rstd.to_vector()[1], 1.0, 1e-7);
}

TEST(RmsNorm, EpsEntersUnderTheRoot) {
  Tensor x = Tensor::from_values({2, 2}, {1, 2}, DType::kF64);
  Tensor w = Tensor::ones({2}, DType::kF64);
  ops::RmsNormOutput out = ops::rmsnorm_forward(x, w, 0.5f, RmsNormStyle::kGlm);
  EXPECT_EQ(out.rstd.dtype(), DType::kF64);
  EXPECT_EQ(out.rstd.shape(), (Shape{1}));
  EXPECT_NEAR(out.y.to_vector()[0], 2 / std::sqrt(4.5), 1e-12);
}

TEST(RmsNorm, GradientsMatchFiniteDifferencesInBothStyles) {
  for (RmsNormStyle style : {RmsNormStyle::kQwen, RmsNormStyle::kGlm}) {
    for (Shape shape : {Shape{3, 7}, Shape{2, 3, 5}, Shape{4, 1}, Shape{1, 13}}) {
      std::int64_t hidden = shape.back();
      float eps = 1e-5f;
      auto forward = [&](const std::vector<Tensor>& in) { return ops::rmsnorm_forward(in[0], in[1], eps, style).y; };
      auto backward = [&](const std::vector<Tensor>& in, const Tensor& grad) {
        ops::RmsNormOutput out = ops::rmsnorm_forward(in[0], in[1], eps, style);
        ops::RmsNormGrads g = ops::rmsnorm_backward(grad, in[0], in[1], out.rstd, style);
        return std::vector<Tensor>{g.grad_x, g.grad_weight};
      };
      expect_gradients_match(std::string("rmsnorm ") + style_name(style) + " " + shape_str(shape), forward, backward,
                             {random_tensor(shape, 1), random_tensor({hidden}, 2)}, {true, true});
    }
  }
}

TEST(RmsNorm, NonContiguousInputsEqualContiguousOnes) {
  Tensor x = random_tensor({6, 4}, 3).transpose(0, 1);  // [4, 6] view
  Tensor w = random_tensor({12}, 4).slice(0, 0, 12, 2);
  Tensor g = random_tensor({4, 6}, 5);
  for (RmsNormStyle style : {RmsNormStyle::kQwen, RmsNormStyle::kGlm}) {
    ops::RmsNormOutput view = ops::rmsnorm_forward(x, w, 1e-6f, style);
    ops::RmsNormOutput copy = ops::rmsnorm_forward(x.contiguous(), w.contiguous(), 1e-6f, style);
    EXPECT_EQ(view.y.to_vector(), copy.y.to_vector());
    ops::RmsNormGrads gv = ops::rmsnorm_backward(g, x, w, view.rstd, style);
    ops::RmsNormGrads gc = ops::rmsnorm_backward(g, x.contiguous(), w.contiguous(), copy.rstd, style);
    EXPECT_EQ(gv.grad_x.to_vector(), gc.grad_x.to_vector());
    EXPECT_EQ(gv.grad_weight.to_vector(), gc.grad_weight.to_vector());
  }
}

// HF's recipes written with other ops: n = x.float() * rsqrt(mean(x²) + eps) in float32
// (an f32 RMSNorm with unit weight), then
//   Qwen: weight * n.to(bf16)           (a bf16 product: float product, rounded once)
//   GLM:  (weight * n).to(bf16)         (a float32 product, rounded once)
TEST(RmsNorm, Bf16RoundsAsEachStyleRecipe) {
  Tensor x = random_tensor({64, 129}, 6, DType::kBF16);
  Tensor w = Tensor::normal({129}, 7, 0, 1.0, 0.5, DType::kBF16);
  float eps = 1e-6f;
  Tensor n = ops::rmsnorm_forward(x.to(DType::kF32), Tensor::ones({129}, DType::kF32), eps, RmsNormStyle::kGlm).y;
  Tensor qwen_expected = ops::mul_forward(n.to(DType::kBF16), w);
  Tensor glm_expected = ops::mul_forward(n, w.to(DType::kF32)).to(DType::kBF16);
  Tensor qwen = ops::rmsnorm_forward(x, w, eps, RmsNormStyle::kQwen).y;
  Tensor glm = ops::rmsnorm_forward(x, w, eps, RmsNormStyle::kGlm).y;
  EXPECT_EQ(qwen.dtype(), DType::kBF16);
  EXPECT_EQ(qwen.to_vector(), qwen_expected.to_vector());
  EXPECT_EQ(glm.to_vector(), glm_expected.to_vector());
  Values q = qwen.to_vector(), g = glm.to_vector();
  int differing = 0;
  for (std::size_t i = 0; i < q.size(); ++i) differing += q[i] != g[i];
  EXPECT_GT(differing, 0) << "the two styles' roundings should differ somewhere on this many elements";
}

TEST(RmsNorm, Bf16BackwardIsCloseToFloat32) {
  Tensor x = random_tensor({5, 33}, 8, DType::kBF16), w = random_tensor({33}, 9, DType::kBF16);
  Tensor g = random_tensor({5, 33}, 10, DType::kBF16);
  ops::RmsNormOutput out16 = ops::rmsnorm_forward(x, w, 1e-6f, RmsNormStyle::kQwen);
  ops::RmsNormGrads g16 = ops::rmsnorm_backward(g, x, w, out16.rstd, RmsNormStyle::kQwen);
  Tensor x32 = x.to(DType::kF32), w32 = w.to(DType::kF32), g32 = g.to(DType::kF32);
  ops::RmsNormOutput out32 = ops::rmsnorm_forward(x32, w32, 1e-6f, RmsNormStyle::kQwen);
  ops::RmsNormGrads g32s = ops::rmsnorm_backward(g32, x32, w32, out32.rstd, RmsNormStyle::kQwen);
  EXPECT_LE(relative_error(g16.grad_x, g32s.grad_x), 1e-2);
  EXPECT_LE(relative_error(g16.grad_weight, g32s.grad_weight), 1e-2);
}

TEST(RmsNorm, BadArgumentsNameShapesAndDtypes) {
  Tensor x = random_tensor({2, 8}, 11, DType::kF32);
  std::string msg =
      error_of([&] { ops::rmsnorm_forward(x, random_tensor({7}, 12, DType::kF32), 1e-6f, RmsNormStyle::kQwen); });
  EXPECT_NE(msg.find("[7]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("8"), std::string::npos) << msg;
  msg = error_of([&] { ops::rmsnorm_forward(x, random_tensor({8}, 12, DType::kBF16), 1e-6f, RmsNormStyle::kQwen); });
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bfloat16"), std::string::npos) << msg;
  ops::RmsNormOutput out = ops::rmsnorm_forward(x, random_tensor({8}, 12, DType::kF32), 1e-6f, RmsNormStyle::kQwen);
  msg = error_of([&] {
    ops::rmsnorm_backward(random_tensor({2, 9}, 13, DType::kF32), x, random_tensor({8}, 12, DType::kF32), out.rstd,
                          RmsNormStyle::kQwen);
  });
  EXPECT_NE(msg.find("[2, 9]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 8]"), std::string::npos) << msg;
  msg = error_of([&] {
    ops::rmsnorm_backward(x, x, random_tensor({8}, 12, DType::kF32), Tensor::ones({3}, DType::kF32),
                          RmsNormStyle::kQwen);
  });
  EXPECT_NE(msg.find("saved_rstd"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3]"), std::string::npos) << msg;
}

// ---- RoPE ----

Tensor positions_of(const Values& values, DType dtype = DType::kI64) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

TEST(Rope, RotateHalfHandComputedValues) {
  Tensor x = Tensor::from_values({1, 2, 3, 4}, {1, 1, 4}, DType::kF64);
  Values y = ops::rope_forward(x, positions_of({1}), {RopeStyle::kRotateHalf, 10000.0, 1.0}).to_vector();
  double a0 = 1.0, a1 = 0.01;  // inv_freq = 10000^(-0/4), 10000^(-2/4)
  EXPECT_NEAR(y[0], 1 * std::cos(a0) - 3 * std::sin(a0), 1e-12);
  EXPECT_NEAR(y[2], 3 * std::cos(a0) + 1 * std::sin(a0), 1e-12);
  EXPECT_NEAR(y[1], 2 * std::cos(a1) - 4 * std::sin(a1), 1e-12);
  EXPECT_NEAR(y[3], 4 * std::cos(a1) + 2 * std::sin(a1), 1e-12);
}

TEST(Rope, InterleavedWithFractionHalfRotatesTheFirstHalfOnly) {
  Tensor x = Tensor::from_values({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 8}, DType::kF64);
  Values y = ops::rope_forward(x, positions_of({3}), {RopeStyle::kInterleaved, 10000.0, 0.5}).to_vector();
  double a0 = 3.0, a1 = 3.0 * std::pow(10000.0, -0.5);  // rotary_dim 4: inv_freq 10000^(-0/4), 10000^(-2/4)
  EXPECT_NEAR(y[0], 1 * std::cos(a0) - 2 * std::sin(a0), 1e-12);
  EXPECT_NEAR(y[1], 2 * std::cos(a0) + 1 * std::sin(a0), 1e-12);
  EXPECT_NEAR(y[2], 3 * std::cos(a1) - 4 * std::sin(a1), 1e-12);
  EXPECT_NEAR(y[3], 4 * std::cos(a1) + 3 * std::sin(a1), 1e-12);
  EXPECT_EQ((Values{y[4], y[5], y[6], y[7]}), (Values{5, 6, 7, 8}));
}

struct RopeCase {
  RopeConfig config;
  std::int64_t heads, head_dim;
};

std::vector<RopeCase> rope_cases() {
  return {{{RopeStyle::kRotateHalf, 10000.0, 1.0}, 3, 6},
          {{RopeStyle::kRotateHalf, 1e6, 0.5}, 2, 12},
          {{RopeStyle::kInterleaved, 10000.0, 0.5}, 2, 8},
          {{RopeStyle::kInterleaved, 500.0, 1.0}, 1, 10}};
}

std::string rope_name(const RopeCase& c) {
  return std::string(c.config.style == RopeStyle::kRotateHalf ? "rotate_half" : "interleaved") + " fraction " +
         std::to_string(c.config.rotary_fraction) + " head_dim " + std::to_string(c.head_dim);
}

TEST(Rope, GradientsMatchFiniteDifferencesWithOddPositions) {
  for (const RopeCase& c : rope_cases()) {
    for (DType position_dtype : {DType::kI64, DType::kI32}) {
      Tensor positions = positions_of({3, 0, 7, 1, 12}, position_dtype);
      auto forward = [&](const std::vector<Tensor>& in) { return ops::rope_forward(in[0], positions, c.config); };
      auto backward = [&](const std::vector<Tensor>&, const Tensor& grad) {
        return std::vector<Tensor>{ops::rope_backward(grad, positions, c.config)};
      };
      expect_gradients_match("rope " + rope_name(c), forward, backward, {random_tensor({5, c.heads, c.head_dim}, 20)},
                             {true});
    }
  }
}

TEST(Rope, BackwardUndoesForward) {
  Tensor positions = positions_of({0, 5, 9, 2, 2, 1000, 31});
  for (const RopeCase& c : rope_cases()) {
    Tensor x = random_tensor({7, c.heads, c.head_dim}, 21);
    Tensor back = ops::rope_backward(ops::rope_forward(x, positions, c.config), positions, c.config);
    EXPECT_LE(max_abs_diff(back, x), 1e-12) << rope_name(c);
  }
}

TEST(Rope, PositionZeroIsIdentity) {
  for (const RopeCase& c : rope_cases())
    for (DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
      Tensor x = random_tensor({4, c.heads, c.head_dim}, 22, dtype);
      Tensor y = ops::rope_forward(x, positions_of({0, 0, 0, 0}), c.config);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.to_vector(), x.to_vector()) << rope_name(c) << " " << dtype_name(dtype);
    }
}

TEST(Rope, PackedSequencesRotateByTheirOwnPositions) {
  // Two sequences packed back to back: positions restart, so equal positions rotate equally.
  Tensor x = random_tensor({1, 2, 8}, 23).expand({4, 2, 8}).contiguous();
  Values y = ops::rope_forward(x, positions_of({0, 1, 0, 1}), {}).to_vector();
  Values first(y.begin(), y.begin() + 32), second(y.begin() + 32, y.end());
  EXPECT_EQ(first, second);
}

TEST(Rope, Bf16RoundsCosSinAndProductsLikeHf) {
  Tensor x = random_tensor({6, 3, 16}, 24, DType::kBF16);
  Tensor positions = positions_of({1, 17, 300, 4095, 5, 77});
  for (const RopeCase& c : rope_cases()) {
    if (16 * c.config.rotary_fraction != std::floor(16 * c.config.rotary_fraction)) continue;
    Tensor y16 = ops::rope_forward(x, positions, c.config);
    Tensor y32 = ops::rope_forward(x.to(DType::kF32), positions, c.config);
    EXPECT_EQ(y16.dtype(), DType::kBF16);
    EXPECT_LE(relative_error(y16, y32), 1e-2) << rope_name(c);
  }
  // One element by hand: head_dim 2 at position 3 rotates (x0, x1) by 3 radians, rounding
  // cos, sin, both products and the difference to bfloat16.
  auto bf = [](double v) { return Tensor::from_values({v}, {1}, DType::kBF16).to_vector()[0]; };
  Tensor pair = Tensor::from_values({1.5, -2.25}, {1, 1, 2}, DType::kBF16);
  double c = bf(std::cos(3.0f)), s = bf(std::sin(3.0f));
  double expected0 = bf(bf(1.5 * c) - bf(-2.25 * s));
  EXPECT_EQ(ops::rope_forward(pair, positions_of({3}), {}).to_vector()[0], expected0);
}

TEST(Rope, BadArgumentsNameShapesAndDtypes) {
  Tensor x = random_tensor({4, 2, 8}, 25, DType::kF32);
  std::string msg = error_of([&] { ops::rope_forward(x, positions_of({0, 1, 2}), {}); });
  EXPECT_NE(msg.find("[3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4"), std::string::npos) << msg;
  msg = error_of([&] { ops::rope_forward(random_tensor({4, 16}, 25, DType::kF32), positions_of({0, 1, 2, 3}), {}); });
  EXPECT_NE(msg.find("[4, 16]"), std::string::npos) << msg;
  msg = error_of([&] { ops::rope_forward(x, positions_of({0, 1, 2, 3}, DType::kF32), {}); });
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  msg = error_of([&] { ops::rope_forward(x, positions_of({0, 1, 2, 3}), {RopeStyle::kInterleaved, 1e4, 0.125}); });
  EXPECT_NE(msg.find("rotary_fraction"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt
