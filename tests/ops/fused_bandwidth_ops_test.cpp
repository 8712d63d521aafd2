// The CPU references added with the bandwidth kernels: RMSNorm with the residual add fused
// in (float64 finite differences, and bit-equality with the unfused ops), multi-tensor AdamW
// (bit-equality with one adamw_step per parameter, the all-or-nothing skip), and in-place
// RoPE on q and k (equal to the out-of-place op, head slices rotated where they are).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/optim/adamw.h"
#include "ops/norm/rmsnorm.h"
#include "ops/rope/rope.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using ops::RmsNormStyle;
using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;

const char* style_name(RmsNormStyle style) { return style == RmsNormStyle::kQwen ? "qwen" : "glm"; }

// ---- RMSNorm with the residual add ----

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
      testing::expect_gradients_match(std::string("rmsnorm_residual ") + style_name(style) + " " + shape_str(shape),
                                      forward, backward,
                                      {random_tensor(shape, 1), random_tensor(shape, 2), random_tensor({hidden}, 3)},
                                      {true, true, true});
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
  expect_mentions(error_of([&] { ops::rmsnorm_residual_forward(x, random_tensor({2, 5}, 3, DType::kF32), w, 1e-6f,
                                                               RmsNormStyle::kQwen); }),
                  {"rmsnorm_residual_forward", "residual", "[2, 5]", "[2, 4]"});
  expect_mentions(error_of([&] { ops::rmsnorm_residual_forward(x, x.to(DType::kBF16), w, 1e-6f, RmsNormStyle::kQwen); }),
                  {"residual", "bfloat16"});
  ops::RmsNormResidualOutput out = ops::rmsnorm_residual_forward(x, x, w, 1e-6f, RmsNormStyle::kGlm);
  expect_mentions(error_of([&] { ops::rmsnorm_residual_backward(x, random_tensor({4, 2}, 4, DType::kF32), out.sum, w,
                                                                out.rstd, RmsNormStyle::kGlm); }),
                  {"rmsnorm_residual_backward", "grad_sum", "[4, 2]"});
}

// ---- AdamW over many tensors ----

struct ParamState {
  Tensor master, exp_avg, exp_avg_sq, working;
};

ParamState fresh(const Shape& shape, std::uint64_t seed, DType working_dtype) {
  Tensor master = Tensor::normal(shape, seed, 0, 0.0, 1.0, DType::kF32);
  Tensor working = Tensor::empty(shape, working_dtype);
  working.copy_from(master);
  return {master, Tensor::normal(shape, seed, 1, 0.0, 0.1, DType::kF32),
          Tensor::uniform(shape, seed, 2, 0.0, 0.01, DType::kF32), working};
}

TEST(AdamWMulti, EqualsOneAdamWStepPerParameterBitForBit) {
  const Shape shapes[] = {{0}, {5}, {3, 7}, {1}, {0, 4}, {130}};
  const double decays[] = {0.1, 0.0, 0.3, 0.1, 0.1, 0.0};
  const DType grad_dtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kF32, DType::kBF16, DType::kF32};
  std::vector<ParamState> multi, single;
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    multi.push_back(fresh(shapes[i], 20 + i, i % 2 ? DType::kBF16 : DType::kF16));
    single.push_back(fresh(shapes[i], 20 + i, i % 2 ? DType::kBF16 : DType::kF16));
  }
  ops::AdamWConfig config{3e-3, 0.9, 0.95, 1e-8, 0.1, 1, 4.0};
  for (std::int64_t step = 1; step <= 4; ++step) {
    config.step = step;
    std::vector<ops::AdamWParam> params;
    for (std::size_t i = 0; i < std::size(shapes); ++i) {
      Tensor grad = Tensor::normal(shapes[i], 100 * step + i, 0, 0.0, 4.0, grad_dtypes[i]);
      params.push_back({multi[i].master, multi[i].exp_avg, multi[i].exp_avg_sq, grad, multi[i].working, decays[i]});
      ops::AdamWConfig own = config;
      own.weight_decay = decays[i];
      EXPECT_FALSE(ops::adamw_step(single[i].master, single[i].exp_avg, single[i].exp_avg_sq, grad, own,
                                   single[i].working).item());
    }
    EXPECT_FALSE(ops::adamw_step_multi(params, config).item());
  }
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    std::string what = "param " + std::to_string(i);
    EXPECT_EQ(multi[i].master.to_vector(), single[i].master.to_vector()) << what;
    EXPECT_EQ(multi[i].exp_avg.to_vector(), single[i].exp_avg.to_vector()) << what;
    EXPECT_EQ(multi[i].exp_avg_sq.to_vector(), single[i].exp_avg_sq.to_vector()) << what;
    EXPECT_EQ(multi[i].working.to_vector(), single[i].working.to_vector()) << what;
  }
}

TEST(AdamWMulti, WeightDecayDefaultsToTheConfigs) {
  ParamState a = fresh({9}, 1, DType::kBF16), b = fresh({9}, 1, DType::kBF16);
  Tensor grad = Tensor::normal({9}, 2, 0, 0.0, 1.0, DType::kF32);
  ops::AdamWConfig config{1e-2, 0.9, 0.999, 1e-8, 0.5, 1, 1.0};
  ops::adamw_step_multi({{a.master, a.exp_avg, a.exp_avg_sq, grad, Tensor(), std::nullopt}}, config);
  ops::adamw_step(b.master, b.exp_avg, b.exp_avg_sq, grad, config);
  EXPECT_EQ(a.master.to_vector(), b.master.to_vector());
  ops::adamw_step_multi({{a.master, a.exp_avg, a.exp_avg_sq, grad, Tensor(), 0.0}}, config);
  config.weight_decay = 0.0;
  ops::adamw_step(b.master, b.exp_avg, b.exp_avg_sq, grad, config);
  EXPECT_EQ(a.master.to_vector(), b.master.to_vector());
}

TEST(AdamWMulti, ANonFiniteGradientAnywhereSkipsEveryParameter) {
  std::vector<ParamState> states{fresh({4}, 1, DType::kBF16), fresh({6}, 2, DType::kBF16), fresh({3}, 3, DType::kF16)};
  std::vector<std::vector<double>> before;
  for (const ParamState& s : states) before.push_back(s.master.to_vector());
  std::vector<double> bad(6, 0.5);
  bad[4] = std::numeric_limits<double>::quiet_NaN();
  std::vector<ops::AdamWParam> params{
      {states[0].master, states[0].exp_avg, states[0].exp_avg_sq, Tensor::ones({4}, DType::kF32), states[0].working, std::nullopt},
      {states[1].master, states[1].exp_avg, states[1].exp_avg_sq, Tensor::from_values(bad, {6}, DType::kBF16),
       states[1].working, std::nullopt},
      {states[2].master, states[2].exp_avg, states[2].exp_avg_sq, Tensor::ones({3}, DType::kF16), states[2].working, std::nullopt}};
  EXPECT_TRUE(ops::adamw_step_multi(params, {}).item());
  for (std::size_t i = 0; i < states.size(); ++i) EXPECT_EQ(states[i].master.to_vector(), before[i]) << i;
  EXPECT_FALSE(ops::adamw_step_multi({}, {}).item());
}

TEST(AdamWMulti, BadArgumentsNameTheParameter) {
  ParamState s = fresh({4}, 1, DType::kBF16);
  Tensor grad = Tensor::ones({4}, DType::kF32);
  std::vector<ops::AdamWParam> params{{s.master, s.exp_avg, s.exp_avg_sq, grad, s.working, std::nullopt},
                                      {s.master, s.exp_avg, s.exp_avg_sq, Tensor::ones({5}, DType::kF32), s.working, std::nullopt}};
  expect_mentions(error_of([&] { ops::adamw_step_multi(params, {}); }),
                  {"adamw_step_multi", "params[1].grad", "[5]", "[4]"});
  params[1] = {s.master, s.exp_avg.to(DType::kBF16), s.exp_avg_sq, grad, s.working, std::nullopt};
  expect_mentions(error_of([&] { ops::adamw_step_multi(params, {}); }), {"params[1].exp_avg", "bfloat16"});
}

// ---- RoPE in place ----

TEST(RopeInPlace, EqualsOutOfPlaceOnQAndKTogether) {
  for (ops::RopeConfig config : {ops::RopeConfig{ops::RopeStyle::kRotateHalf, 1e6, 1.0},
                                 ops::RopeConfig{ops::RopeStyle::kInterleaved, 1e4, 0.5}})
    for (DType dtype : {DType::kBF16, DType::kF32, DType::kF64}) {
      Tensor q = random_tensor({6, 4, 16}, 1, dtype), k = random_tensor({6, 2, 16}, 2, dtype);
      Tensor positions = Tensor::from_values({0, 1, 2, 0, 1, 700}, {6}, DType::kI64);
      Tensor q_ref = ops::rope_forward(q, positions, config), k_ref = ops::rope_forward(k, positions, config);
      ops::rope_forward_inplace(q, k, positions, config);
      EXPECT_EQ(q.to_vector(), q_ref.to_vector()) << dtype_name(dtype);
      EXPECT_EQ(k.to_vector(), k_ref.to_vector()) << dtype_name(dtype);
      Tensor q_back = ops::rope_backward(q, positions, config);
      ops::rope_backward_inplace(q, Tensor(), positions, config);
      EXPECT_EQ(q.to_vector(), q_back.to_vector()) << dtype_name(dtype);
    }
}

TEST(RopeInPlace, RotatesHeadSlicesOfAFusedProjectionWhereTheyAre) {
  Tensor qkv = random_tensor({5, 8, 8}, 3, DType::kF32);  // [tokens, 4 q + 2 k + 2 v heads, head_dim]
  Tensor original = qkv.clone();
  Tensor positions = Tensor::from_values({3, 4, 5, 6, 7}, {5}, DType::kI32);
  ops::RopeConfig config{ops::RopeStyle::kRotateHalf, 1e4, 1.0};
  Tensor q_ref = ops::rope_forward(original.narrow(1, 0, 4), positions, config);
  Tensor k_ref = ops::rope_forward(original.narrow(1, 4, 2), positions, config);
  ops::rope_forward_inplace(qkv.narrow(1, 0, 4), qkv.narrow(1, 4, 2), positions, config);
  EXPECT_EQ(qkv.narrow(1, 0, 4).to_vector(), q_ref.to_vector());
  EXPECT_EQ(qkv.narrow(1, 4, 2).to_vector(), k_ref.to_vector());
  EXPECT_EQ(qkv.narrow(1, 6, 2).to_vector(), original.narrow(1, 6, 2).to_vector()) << "v must be untouched";
}

TEST(RopeInPlace, RefusesLayoutsItCannotRotateInPlace) {
  Tensor x = random_tensor({4, 3, 8}, 4, DType::kF32);
  Tensor strided = random_tensor({4, 3, 16}, 6, DType::kF32).slice(2, 0, 16, 2);  // head dims 2 apart
  Tensor positions = Tensor::zeros({4}, DType::kI64);
  ops::RopeConfig config;
  expect_mentions(error_of([&] { ops::rope_forward_inplace(strided, Tensor(), positions, config); }),
                  {"rope_forward_inplace", "q", "strides", "out-of-place"});
  expect_mentions(error_of([&] { ops::rope_forward_inplace(x, random_tensor({4, 3, 6}, 5, DType::kF32), positions,
                                                           config); }),
                  {"head_dim", "[4, 3, 6]"});
}

}  // namespace
}  // namespace zt
