// RMSNorm with the residual add fused in, on the CPU: gradients of both outputs by float64
// finite differences, bit-equality with the unfused add then norm, and errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/norm/rmsnorm.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using ops::RmsNormStyle;
using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;

const char* style_name(RmsNormStyle style) { return style == RmsNormStyle::kQwen ? "qwen" : "glm"; }

// y and sum stacked into one [2, ...] output, so one probe weighs both.
Tensor stacked(const Tensor& y, const Tensor& sum) {
  Shape shape = y.shape();
  shape.insert(shape.begin(), 2);
  Tensor out = Tensor::empty(shape, y.dtype());
  out.select(0, 0).copy_from(y);
  out.select(0, 1).copy_from(sum);
  return out;
}

TEST(RmsNormResidual, GradientsOfBothOutputsMatchFiniteDifferences) {
  for (RmsNormStyle style : {RmsNormStyle::kQwen, RmsNormStyle::kGlm})
    for (const Shape& shape : {Shape{3, 7}, Shape{2, 2, 5}, Shape{4, 1}}) {
      std::int64_t hidden = shape.back();
      float eps = 1e-5f;
      auto forward = [&](const std::vector<Tensor>& in) {
        ops::RmsNormResidualOutput out = ops::rmsnorm_residual_forward(in[0], in[1], in[2], eps, style);
        return stacked(out.y, out.sum);
      };
      auto backward = [&](const std::vector<Tensor>& in, const Tensor& grad) {
        ops::RmsNormResidualOutput out = ops::rmsnorm_residual_forward(in[0], in[1], in[2], eps, style);
        ops::RmsNormResidualGrads g = ops::rmsnorm_residual_backward(
            grad.select(0, 0).contiguous(), grad.select(0, 1).contiguous(), out.sum, in[2], out.rstd, style);
        return std::vector<Tensor>{g.grad_input, g.grad_input, g.grad_weight};
      };
      testing::expect_gradients_match(
          std::string("rmsnorm_residual ") + style_name(style) + " " + shape_str(shape), forward, backward,
          {random_tensor(shape, 1), random_tensor(shape, 2), random_tensor({hidden}, 3)}, {true, true, true});
    }
}

TEST(RmsNormResidual, Is16BitBitForBitTheUnfusedAddThenNorm) {
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32})
    for (RmsNormStyle style : {RmsNormStyle::kQwen, RmsNormStyle::kGlm}) {
      std::string what = std::string(dtype_name(dtype)) + " " + style_name(style);
      Tensor x = random_tensor({5, 24}, 10, dtype), residual = random_tensor({5, 24}, 11, dtype);
      Tensor w = random_tensor({24}, 12, dtype, 1.0), gy = random_tensor({5, 24}, 13, dtype);
      Tensor gs = random_tensor({5, 24}, 14, dtype);
      ops::RmsNormResidualOutput fused = ops::rmsnorm_residual_forward(x, residual, w, 1e-6f, style);
      std::vector<double> xs = x.to_vector(), rs = residual.to_vector(), sum(xs.size());
      for (std::size_t i = 0; i < xs.size(); ++i) sum[i] = xs[i] + rs[i];  // exact in double, rounded once below
      Tensor sum_ref = Tensor::from_values(sum, {5, 24}, dtype);
      EXPECT_EQ(fused.sum.to_vector(), sum_ref.to_vector()) << what;
      ops::RmsNormOutput plain = ops::rmsnorm_forward(sum_ref, w, 1e-6f, style);
      EXPECT_EQ(fused.y.to_vector(), plain.y.to_vector()) << what;
      EXPECT_EQ(fused.rstd.to_vector(), plain.rstd.to_vector()) << what;

      ops::RmsNormGrads unfused = ops::rmsnorm_backward(gy, sum_ref, w, plain.rstd, style);
      ops::RmsNormResidualGrads alone = ops::rmsnorm_residual_backward(gy, Tensor(), fused.sum, w, fused.rstd, style);
      EXPECT_EQ(alone.grad_input.to_vector(), unfused.grad_x.to_vector()) << what;
      EXPECT_EQ(alone.grad_weight.to_vector(), unfused.grad_weight.to_vector()) << what;
      ops::RmsNormResidualGrads with = ops::rmsnorm_residual_backward(gy, gs, fused.sum, w, fused.rstd, style);
      std::vector<double> dx = unfused.grad_x.to_vector(), g = gs.to_vector(), total(dx.size());
      for (std::size_t i = 0; i < dx.size(); ++i) total[i] = dx[i] + g[i];
      EXPECT_EQ(with.grad_input.to_vector(), Tensor::from_values(total, {5, 24}, dtype).to_vector()) << what;
      EXPECT_EQ(with.grad_weight.to_vector(), unfused.grad_weight.to_vector()) << what;
    }
}

TEST(RmsNormResidual, BadArgumentsSayWhich) {
  Tensor x = random_tensor({2, 4}, 1, DType::kF32), w = random_tensor({4}, 2, DType::kF32);
  expect_mentions(
      error_of([&] {
        ops::rmsnorm_residual_forward(x, random_tensor({2, 5}, 3, DType::kF32), w, 1e-6f, RmsNormStyle::kQwen);
      }),
      {"rmsnorm_residual_forward", "residual", "[2, 5]", "[2, 4]"});
  expect_mentions(
      error_of([&] { ops::rmsnorm_residual_forward(x, x.to(DType::kBF16), w, 1e-6f, RmsNormStyle::kQwen); }),
      {"residual", "bfloat16"});
  ops::RmsNormResidualOutput out = ops::rmsnorm_residual_forward(x, x, w, 1e-6f, RmsNormStyle::kGlm);
  expect_mentions(error_of([&] {
                    ops::rmsnorm_residual_backward(x, random_tensor({4, 2}, 4, DType::kF32), out.sum, w, out.rstd,
                                                   RmsNormStyle::kGlm);
                  }),
                  {"rmsnorm_residual_backward", "grad_sum", "[4, 2]"});
}

}  // namespace
}  // namespace zt
